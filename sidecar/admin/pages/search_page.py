"""/search?q=: the same hybrid engine as Search, with each hit's per-source explanation."""

from __future__ import annotations

from sidecar.admin.context import Ctx
from sidecar.admin.forms import scope
from sidecar.admin.html import e, link, page, select, table
from sidecar.admin.web import Response, url
from sidecar.api.validate import MAX_QUERY_CHARS, check_name, check_text
from sidecar.retrieval.contract import Hit, Mode, SearchQuery

MODES = tuple(m.value for m in Mode)
LIMIT = 20


def show(ctx: Ctx) -> Response:
    """``user``: search as that end user of the agent (their private memories too), the
    scopes a Search with ``user_id`` reads; none = no user's."""
    arg = ctx.request.arg
    text, agent, user = arg("q").strip(), arg("agent"), arg("user")
    mode = arg("mode") or Mode.HYBRID.value
    body = _form(text, agent, user, mode)
    if text:
        check_text(text, "q", MAX_QUERY_CHARS)
        check_name(agent, "agent")
        check_name(user, "user")
        chosen = Mode(mode) if mode in MODES else Mode.HYBRID
        search_limit = max(ctx.services.settings.current.retrieval.search_limit, LIMIT)
        result = ctx.services.retriever.search(SearchQuery(
            text=text, agent_id=agent, user_id=user, limit=LIMIT, mode=chosen,
            search_limit=search_limit))
        body += table(("Memory", "Scope", "Fused score", "Cosine", "Sources (rank × weight)"),
                      (_row(h) for h in result.hits), "No hits.")
        body += ('<p class="muted">Fused score: the sum over sources of weight / (rrf_k + '
                 "rank); — = absent from that source's list.</p>")
    return page("Search", body, here="/search")


def _form(text: str, agent: str, user: str, mode: str) -> str:
    return (f'<form method="get" action="/search"><p>'
            f'<input type="text" name="q" value="{e(text)}" size=50 placeholder="search text"> '
            f'Agent <input type="text" name="agent" value="{e(agent)}" size=14> '
            f'User <input type="text" name="user" value="{e(user)}" size=10> '
            f"Mode {select('mode', MODES, mode, blank=None)} <button>Search</button></p>"
            "</form>"
            '<p class="muted">Agent: its own memories and the shared ones (empty = shared '
            "only). User: as that end user of the agent, their private memories too (empty = "
            "no user's).</p>")


def _row(hit: Hit) -> list[str]:
    sources = ", ".join(f"{e(r.name)} #{r.rank} × {r.weight:g}" if r.rank else
                        f"{e(r.name)} —" for r in hit.ranks)
    return [link(url("/memory", id=hit.memory.id), hit.memory.content, free_text=True),
            scope(hit.memory), f"{hit.score:.4f}", f"{hit.cosine:.3f}", sources]
