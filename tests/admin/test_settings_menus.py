"""/settings offers every key with a fixed set of values as a menu of exactly those values,
read from the config schema (booleans: true/false; strings: their rule's choices), the
current one selected; a value posted outside the set is refused by the server all the same."""

from __future__ import annotations

import re
from dataclasses import fields

from sidecar.admin.pages.settings_page import TYPES
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.knobs import rule_of
from tests.admin.conftest import Site
from tests.admin.test_admin_http import call, form_token

SELECT = re.compile(r'<select name="([a-z_]+)">(.*?)</select>', re.DOTALL)
OPTION = re.compile(r'<option value="([^"]*)"( selected)?>')


def menus(site: Site, path: str) -> dict[str, tuple[list[str], list[str]]]:
    """Per key shown as a menu: (its options, the selected ones)."""
    status, _, text = call(site, "GET", path)
    assert status == 200
    out = {}
    for key, body in SELECT.findall(text):
        options = OPTION.findall(body)
        out[key] = ([v for v, _ in options], [v for v, chosen in options if chosen])
    return out


def test_enum_keys_are_menus_of_their_allowed_values(site: Site) -> None:
    current = MemoryInjectionConfig()
    expected = {}
    for f in fields(MemoryInjectionConfig):
        choices = rule_of(f).choices if TYPES[f.name] is str else ()
        if TYPES[f.name] is bool:
            choices = ("true", "false")
        if choices:
            value = getattr(current, f.name)
            expected[f.name] = (list(choices), [str(value).lower() if isinstance(value, bool)
                                                else value])
    assert {"capture", "pinned_sort", "pinned_source"} <= set(expected)
    shown = menus(site, "/settings")
    assert {k: v for k, v in shown.items() if k in expected} == expected
    assert "max_total" not in shown  # a number is typed in


def test_a_menu_choice_is_saved_and_one_outside_the_menu_refused(site: Site) -> None:
    csrf = form_token(site)
    settings = site.live.server.app.settings
    status, _, _ = call(site, "POST", "/settings/update",
                        {"csrf": csrf, "agent": "ada", "capture": "user"}, Origin=site.base)
    assert status == 303 and settings.agent("ada").memory_injection.capture == "user"
    assert menus(site, "/settings?agent=ada")["capture"][1] == ["user"]
    status, _, text = call(site, "POST", "/settings/update",
                           {"csrf": csrf, "agent": "ada", "pinned_sort": "sideways"},
                           Origin=site.base)
    assert status == 400 and "Not saved: " in text and "pinned_sort" in text
    assert settings.agent("ada").memory_injection.pinned_sort == MemoryInjectionConfig().pinned_sort
