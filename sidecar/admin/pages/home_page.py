"""/: what is stored, and a link to every page."""

from __future__ import annotations

from sidecar.admin.context import Ctx
from sidecar.admin.html import link, page, table
from sidecar.admin.resident import resident_section
from sidecar.admin.scopes import scope_nav, scope_page
from sidecar.admin.web import Response, url


def show(ctx: Ctx) -> Response:
    stats = ctx.services.vault.totals()
    found = scope_page(ctx)
    scopes = table(("Scope", "Live memories", "Forgotten"),
                   ([link(url("/memories", agent=s.agent_id), s.agent_id or "(shared)"),
                     str(s.live), str(s.forgotten)] for s in found.scopes),
                   "No memories yet." if not stats.scopes else "No scopes on this page.")
    channels = ctx.services.injector.trace.channels()[:10]
    recent = table(("Channel", "Last turn"),
                   ([link(url("/injections", channel=c), c), str(t.turn)] for c, t in channels),
                   "No injections since the sidecar started.")
    body = (f"<p>{stats.live} live memories, {stats.forgotten} forgotten.</p>"
            "<ul><li><a href='/memories'>Memories</a>: browse by agent, type, tier, channel</li>"
            "<li><a href='/search'>Search</a>: hybrid search with each source's rank</li>"
            "<li><a href='/injections'>Injections</a>: what each turn injected and dropped</li>"
            "<li><a href='/settings'>Settings</a>: memory injection per agent</li>"
            "<li><a href='/vault'>Vault</a>: duplicates and deletion proposals</li>"
            f"<li><a href='/metrics'>Metrics</a> (Prometheus)</li></ul>"
            f"<h2>Scopes</h2><p>{stats.scopes} scopes.</p>{scopes}{scope_nav('/', found)}"
            f"{resident_section(ctx.services.retriever)}"
            f"<h2>Recent channels</h2>{recent}")
    return page("memsidecar", body, here="/")
