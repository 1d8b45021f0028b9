"""The admin page over plain HTTP: CSRF, Host and Origin checks, escaping, the admin knob."""

from __future__ import annotations

import http.client
import logging
import re
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlencode

import pytest

from sidecar.admin.csrf import Csrf, data_dir_key
from sidecar.api.server_config import ServerConfig
from sidecar.auth.config import AuthConfig
from sidecar.auth.identity import OPERATOR
from sidecar.auth.tokens import TokenStore
from sidecar.embedding import Embedder
from sidecar.metrics.config import HttpConfig
from tests.admin.conftest import Site, start_site
from tests.conftest import on_postgres
from tests.injection.helpers import inject, put
from tests.injection.test_channel_affinity import BEST, NEAR, OTHERS, QUESTION
from tests.injection.test_trace_api import CAT, DEPLOY, DEPLOY_TOO

HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)>"

Reply = tuple[int, dict[str, str], str]


def call(site: Site, method: str, path: str, body: dict[str, str] | None = None,
         **headers: str) -> Reply:
    port = int(site.base.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port)
    data = urlencode(body) if body is not None else None
    sent = {k.replace("_", "-"): v for k, v in headers.items()}
    if data is not None:
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, path, body=data, headers=sent)
    reply = conn.getresponse()
    out = (reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read().decode())
    conn.close()
    return out


def form_token(site: Site, cookie: str = "") -> str:
    """The CSRF token of the forms of a page (of the session ``cookie`` names, if any)."""
    status, _, text = call(site, "GET", "/settings", Cookie=cookie)
    assert status == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', text)
    assert csrf is not None
    return csrf.group(1)


def test_posts_need_a_csrf_token_and_the_origin(site: Site, tmp_path: Path) -> None:
    csrf = form_token(site)
    form = {"agent": "ada", "max_total": "9"}
    other_key = Csrf(data_dir_key(tmp_path)).issue()  # another data dir's key
    for forged in ("", "forged", other_key, csrf + "x", csrf.replace(".", ".A", 1), "é" * 43,
                   "1." + "é" * 43, "\x00", csrf.split(".")[0] + ".%C3%A9"):
        assert call(site, "POST", "/settings/update", {**form, "csrf": forged})[0] == 403
    assert call(site, "POST", "/settings/update", {**form, "csrf": csrf},
                Origin="http://evil.example")[0] == 403
    assert site.live.server.app.settings.agent("ada").overrides is None  # nothing written
    status, headers, _ = call(site, "POST", "/settings/update", {**form, "csrf": csrf},
                              Origin=site.base)
    assert status == 303 and headers["location"].startswith("/settings?agent=ada")
    assert site.live.server.app.settings.agent("ada").memory_injection.max_total == 9


def test_no_cookie_and_safe_headers_without_auth(site: Site) -> None:
    status, headers, _ = call(site, "GET", "/")
    assert status == 200
    assert "set-cookie" not in headers
    assert "default-src 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    for method in ("GET", "POST"):  # no login without auth: nothing to open
        status, headers, _ = call(site, method, "/login", {"token": "x"})
        assert status == 303 and headers["location"] == "/" and "set-cookie" not in headers


def test_with_auth_a_session_only_after_login(config: ServerConfig, embedder: Embedder) -> None:
    operator = TokenStore(Path(config.data_dir)).add(OPERATOR)[0]
    site = start_site(replace(config, auth=AuthConfig(enabled=True)), embedder)
    try:
        first = login(site, operator)
        for _ in range(1001):  # anonymous visits: sent to the login page, nothing stored
            status, headers, _ = call(site, "GET", "/settings")
            assert status == 303 and headers["location"] == "/login"
        status, headers, _ = call(site, "POST", "/login", {"token": "msk_0_wrong"})
        assert status == 401 and "set-cookie" not in headers
        second = login(site, operator)
        csrf, theirs = form_token(site, first), form_token(site, second)
        revert = {"agent": "ada"}
        sessionless = Csrf(data_dir_key(Path(config.data_dir))).issue()  # valid without auth
        for token in (theirs, sessionless, "", csrf):
            expected = 303 if token == csrf else 403
            assert call(site, "POST", "/settings/revert", {**revert, "csrf": token},
                        Cookie=first)[0] == expected
        call(site, "GET", "/logout", Cookie=first)
        status, headers, _ = call(site, "POST", "/settings/revert", {**revert, "csrf": csrf},
                                  Cookie=first)
        assert status == 303 and headers["location"] == "/login"
    finally:
        site.live.close()


def login(site: Site, token: str) -> str:
    """The cookie header of a new session."""
    status, headers, _ = call(site, "POST", "/login", {"token": token})
    assert status == 303
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    return headers["set-cookie"].split(";", 1)[0]


def test_anonymous_visits_leave_no_state(site: Site) -> None:
    """A page of another site can make a browser load the admin page many times: a token
    issued before still works after, because nothing was stored for those visits."""
    csrf = form_token(site)
    for _ in range(1001):
        assert call(site, "GET", "/settings")[0] == 200
    status, _, _ = call(site, "POST", "/settings/revert", {"csrf": csrf, "agent": "ada"})
    assert status == 303


def test_another_host_name_is_refused_without_auth(site: Site) -> None:
    assert call(site, "GET", "/", Host="attacker.example:9464")[0] == 421
    assert call(site, "GET", "/", Host="localhost")[0] == 200


def test_stored_and_request_text_is_escaped(site: Site) -> None:
    memory = put(site.live, f"a note {HOSTILE}", agent_id="ada")
    inject(site.live, f"note {HOSTILE}", channel=HOSTILE, agent_id="ada")
    pages = ["/memories?agent=ada", f"/memory?id={memory.id}",
             f"/search?{urlencode({'q': 'note ' + HOSTILE, 'agent': 'ada'})}",
             f"/injections?{urlencode({'channel': HOSTILE})}", "/injections", "/",
             f"/settings?{urlencode({'agent': HOSTILE})}"]
    for path in pages:
        status, _, text = call(site, "GET", path)
        assert status == 200, path
        assert "<script>" not in text and "<img" not in text, path
        assert "&lt;script&gt;" in text, path


def test_a_hit_of_another_channel_cut_by_the_floor_shows_as_floor(site: Site) -> None:
    put(site.live, BEST, channel_id="ops")
    near = put(site.live, NEAR, channel_id="sales")
    for text in OTHERS:
        put(site.live, text)
    reply = inject(site.live, QUESTION, channel="ops")
    assert near.id not in [item.id for item in reply.items]
    status, _, text = call(site, "GET", "/injections?channel=ops")
    assert status == 200
    row = text[text.index(f"id={near.id}"):]
    assert re.match(r'[^<]*">[^<]*</a></bdi>\s*</td>\s*<td>\s*<span class="tag">floor</span>',
                    row), \
        row[:300]


def test_bad_input_is_a_clear_page(site: Site) -> None:
    status, _, text = call(site, "GET", "/memories?type=bogus")
    assert status == 400 and "type must be one of" in text
    assert call(site, "GET", "/memory?id=missing")[0] == 400
    assert call(site, "GET", "/no-such-page")[0] == 404
    csrf = form_token(site)
    big = {"csrf": csrf, "agent": "x" * 70_000}
    assert call(site, "POST", "/settings/update", big)[0] == 413
    status, _, text = call(site, "POST", "/settings/update",
                           {"csrf": csrf, "agent": "ada", "max_total": "many"})
    assert status == 400 and "max_total" in text and "not a valid int" in text
    status, _, text = call(site, "POST", "/settings/revert", {"csrf": csrf, "agent": "a\x01"})
    assert status == 400 and "control character" in text


def test_metrics_beside_the_page(site: Site) -> None:
    status, _, text = call(site, "GET", "/metrics")
    assert status == 200 and "memsidecar_" in text


def test_a_memory_never_injected_says_never(site: Site) -> None:
    memory = put(site.live, "the deploy runs on friday")
    status, _, text = call(site, "GET", f"/memory?id={memory.id}")
    assert status == 200 and "<td><b>Injected</b></td><td>never</td>" in text


def test_page_views_have_their_own_counter_not_the_rpcs(site: Site) -> None:
    inject(site.live, "which database?", channel="c1")
    before = call(site, "GET", "/metrics")[2]
    for path in ("/injections?channel=c1", "/injections?channel=c1", "/nowhere"):
        call(site, "GET", path)
    after = call(site, "GET", "/metrics")[2]

    def samples(text: str, prefix: str) -> list[str]:
        return sorted(line for line in text.splitlines() if line.startswith(prefix))

    rpc = "memsidecar_rpc_duration_seconds_count"
    assert samples(after, rpc) == samples(before, rpc)
    assert 'memsidecar_admin_requests_total{page="/injections",status="200"} 2.0' in after
    assert 'memsidecar_admin_requests_total{page="other",status="404"} 1.0' in after


def test_no_open_admin_page_on_a_remote_address(config: ServerConfig, embedder: Embedder,
                                               caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        site = start_site(config, embedder, http_listen="0.0.0.0:0")
    try:
        assert call(site, "GET", "/")[0] == 404
        assert call(site, "GET", "/metrics")[0] == 200
        assert any("admin page off" in r.getMessage() for r in caplog.records)
    finally:
        site.live.close()


def test_admin_switch_off(config: ServerConfig, embedder: Embedder) -> None:
    off = start_site(replace(config, http=HttpConfig(admin=False)), embedder)
    try:
        assert call(off, "GET", "/")[0] == 404
        assert call(off, "GET", "/metrics")[0] == 200
    finally:
        off.live.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_dismissal_outlives_a_restart(config: ServerConfig, embedder: Embedder,
                                        backend: str, request: pytest.FixtureRequest) -> None:
    """On PostgreSQL the page is served again by another sidecar (its own data dir) sharing
    the store: the memories and the dismissal come from the database."""
    again = config
    if backend == "postgres":
        dsn = request.getfixturevalue("pg_dsn")
        config = on_postgres(config, dsn)
        again = on_postgres(replace(config, data_dir=config.data_dir + "-other"), dsn)
    site = start_site(config, embedder)
    try:
        for text in ("The deploy pipeline runs on GitHub Actions every night at 2am.",
                     "Every night at 2am, the deploy pipeline runs on GitHub Actions."):
            put(site.live, text, agent_id="ada")
        csrf = form_token(site)
        text = call(site, "GET", "/vault?scope=ada")[2]
        keys = re.findall(r'name="key" value="(pair:[^"]+)"', text)
        assert len(keys) == 1
        status, _, _ = call(site, "POST", "/vault/dismiss",
                            {"csrf": csrf, "key": keys[0], "scope": "ada"})
        assert status == 303
    finally:
        site.live.close()
    site = start_site(again, embedder)
    try:
        text = call(site, "GET", "/vault?scope=ada")[2]
        assert "No near-duplicate pairs." in text and keys[0] not in text
        assert "NEAR_DUPLICATE" in text  # the deletion proposal is a suggestion of its own
    finally:
        site.live.close()


def test_the_timeline_says_what_each_cosine_is_compared_with(site: Site) -> None:
    first, second = put(site.live, DEPLOY), put(site.live, DEPLOY_TOO)
    put(site.live, CAT)
    reply = inject(site.live, "When does the deploy pipeline run?", channel="twins")
    (kept,) = [item.id for item in reply.items]
    twin = second.id if kept == first.id else first.id
    status, _, text = call(site, "GET", "/injections?channel=twins")
    assert status == 200
    assert text.count("<th>Cosine to query</th>") == 3  # injected, held back, floor
    assert "<th>Cosine</th>" not in text
    assert "what contextual_min_score, relative_floor and background_floor compare" in text
    row = text[text.index(f"id={twin}"):]
    row = row[:row.index("</tr>")]
    found = re.search(r'semantic_duplicate</span> <span class="why">duplicates <bdi><a href='
                      rf'"/memory\?id={kept}">[^<]*</a></bdi> \(cosine (0\.\d+) to it, '
                      r"compared with semantic_threshold\)</span>", row)
    assert found, row
    assert float(found.group(1)) >= 0.85  # the default semantic_threshold


def test_the_settings_heading_names_its_scope_once(site: Site) -> None:
    def heading(path: str) -> str:
        text = call(site, "GET", path)[2]
        return text[text.index("<h1>"):text.index('<form method="get"')]

    assert heading("/settings") == "<h1>Settings: defaults for every agent</h1>"
    ada = heading("/settings?agent=ada")
    assert ada.startswith("<h1>Settings: agent ada</h1><p>Also: ")
    assert ada.count("defaults") == 1 and '<a href="/settings">the defaults</a>' in ada
