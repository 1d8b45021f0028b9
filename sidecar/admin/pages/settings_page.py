"""/settings: effective memory injection per agent, overrides marked; edit and revert.

Edits go through ``ConfigStore.update_injection``, the path of UpdateConfig: the same
validation, the same file write, applied at once. Only the fields whose value changed are
sent, so an edit does not turn every key into an override.
"""

from __future__ import annotations

import typing
from dataclasses import fields
from typing import Any

from sidecar.admin.context import Ctx
from sidecar.admin.html import button_form, e, hidden, link, notice, page, select, table
from sidecar.admin.scopes import name_window, pager, position
from sidecar.admin.web import Response, redirect, url
from sidecar.api.validate import check_name
from sidecar.errors import InvalidArgument
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.knobs import RULE_KEY, Rule
from sidecar.records import MemoryType

TYPES = typing.get_type_hints(MemoryInjectionConfig)
BUILT_IN = MemoryInjectionConfig()
AGENTS = "agents"  # the position in the list of configured agents


def show(ctx: Ctx, error: str = "", status: int = 200) -> Response:
    agent = ctx.request.arg("agent")
    form = (f'<form method="get" action="/settings"><p>Agent <input type="text" name="agent" '
            f'value="{e(agent)}" size=20> <button>Show</button></p></form>')
    body = (_others(ctx, agent) + form + notice(error or ctx.request.arg("done"), bool(error))
            + _editor(ctx, agent))
    title = f"Settings: agent {agent}" if agent else "Settings: defaults for every agent"
    return page(title, body, here="/settings", status=status)


def _others(ctx: Ctx, agent: str) -> str:
    """Links to the other pages of settings: the agents with their own (a page of them at a
    time), and the defaults."""
    after, before = position(ctx, AGENTS)
    shown, earlier, later = name_window(sorted(ctx.services.settings.current.agents), after,
                                        before)
    links = [link(url("/settings", agent=a), a) for a in shown if a != agent]
    if agent:
        links.append(link("/settings", "the defaults"))
    also = f"<p>Also: {' · '.join(links)}</p>" if links else ""
    return also + pager("/settings", shown, earlier, later, "agents", AGENTS, agent=agent)


def update(ctx: Ctx) -> Response:
    agent = ctx.request.arg("agent")
    check_name(agent, "agent_id")
    current = ctx.services.settings.agent(agent).memory_injection
    try:
        changes = {f.name: parse(f.name, ctx.request.form[f.name]) for f in fields(current)
                   if f.name in ctx.request.form
                   and ctx.request.form[f.name].strip() != shown(getattr(current, f.name))}
        ctx.services.settings.update_injection(agent, changes, reset=False)
    except InvalidArgument as err:
        return show(ctx, f"Not saved: {err.message}", status=400)
    done = f"Saved: {', '.join(sorted(changes))}." if changes else "Nothing changed."
    return redirect(url("/settings", agent=agent, done=done))


def revert(ctx: Ctx) -> Response:
    agent = ctx.request.arg("agent")
    check_name(agent, "agent_id")
    ctx.services.settings.update_injection(agent, {}, reset=True)
    return redirect(url("/settings", agent=agent, done="Reverted to the defaults."))


def shown(value: Any) -> str:
    """A value as the form shows it (and as a submitted unchanged value reads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(v.label if isinstance(v, MemoryType) else str(v) for v in value)
    return str(value)


def parse(key: str, text: str) -> Any:
    """A submitted value as TOML-native (what the config file holds); ranges are checked by
    the config loader."""
    kind, text = TYPES[key], text.strip()
    try:
        if kind is bool:
            if text not in ("true", "false"):
                raise ValueError
            return text == "true"
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
    except ValueError:
        raise InvalidArgument(f"memory_injection.{key}: {text[:40]!r} is not a valid "
                              f"{'true/false' if kind is bool else kind.__name__}",
                              field=f"memory_injection.{key}") from None
    if kind is str:
        return text
    return [part.strip() for part in text.split(",") if part.strip()]


def _editor(ctx: Ctx, agent: str) -> str:
    config = ctx.services.settings.agent(agent)
    overrides = set(config.overrides or ()) if agent else {
        f.name for f in fields(BUILT_IN)
        if getattr(config.memory_injection, f.name) != getattr(BUILT_IN, f.name)}
    marker = "overridden for this agent" if agent else "differs from the built-in default"
    rows = (_row(f.name, getattr(config.memory_injection, f.name), f.metadata[RULE_KEY],
                 f.name in overrides, marker) for f in fields(config.memory_injection))
    revert_label = "Revert to the defaults" if agent else "Revert to the built-in defaults"
    return (f'<form method="post" action="/settings/update">{hidden(csrf=ctx.csrf, agent=agent)}'
            + table(("Key", "Value", "Allowed", "Meaning"), rows)
            + "<p><button>Save</button></p></form>"
            + f'<p><span class="over">●</span> = {e(marker)}. '
            + button_form("/settings/revert", revert_label, ctx.csrf, agent=agent) + "</p>")


def _row(key: str, value: Any, rule: Rule, overridden: bool, marker: str) -> list[str]:
    mark = f' <span class="over" title="{e(marker)}">●</span>' if overridden else ""
    menu = menu_of(key, rule)
    if menu:
        field = select(key, menu, shown(value), blank=None)
    else:
        field = f'<input type="text" name="{e(key)}" value="{e(shown(value))}" size=24>'
    return [f"<code>{e(key)}</code>{mark}", field, e(rule.allowed()), e(rule.doc)]


def menu_of(key: str, rule: Rule) -> tuple[str, ...]:
    """The values a key is chosen from (a boolean's two, a string's allowed ones from its
    rule); empty for a key typed in (numbers, lists). What is posted is still validated."""
    if TYPES[key] is bool:
        return ("true", "false")
    return rule.choices if TYPES[key] is str else ()
