"""/memories: browse one scope by type, tier and channel, a page at a time."""

from __future__ import annotations

from sidecar.admin.context import Ctx
from sidecar.admin.forms import TIERS, TYPES, memory_type, scope, tier
from sidecar.admin.html import e, ident, link, page, select, table, when
from sidecar.admin.scopes import scope_nav, scope_page
from sidecar.admin.web import Response, url
from sidecar.api.validate import check_name
from sidecar.records import Memory
from sidecar.store.memories import ListQuery

PAGE_SIZE = 50


def show(ctx: Ctx) -> Response:
    arg = ctx.request.arg
    agent, channel, forgotten = arg("agent"), arg("channel"), arg("forgotten") == "1"
    source, user = arg("source"), arg("user")
    for value, name in ((agent, "agent"), (channel, "channel"), (source, "source"),
                        (user, "user")):
        check_name(value, name)  # as every name of a request
    kind, level = memory_type(arg("type")), tier(arg("tier"))
    query = ListQuery(types=(kind,) if kind else (), tiers=(level,) if level else (),
                      channel_id=channel, agent_id=agent, page_size=PAGE_SIZE,
                      page_token=arg("page"), include_forgotten=forgotten, source=source,
                      user_id=user)
    found, token = ctx.services.memories.list(query)
    params = {"agent": agent, "type": arg("type"), "tier": arg("tier"), "channel": channel,
              "source": source, "user": user, "forgotten": "1" if forgotten else ""}
    more = link(url("/memories", **params, page=token), "Next page") if token else ""
    body = (_filters(ctx, params) + table(("Memory", "Type", "Tier", "Scope", "Channel",
                                           "Importance", "Updated"),
                                          (_row(m) for m in found), "No memories match.")
            + more)
    return page("Memories", body, here="/memories")


def _filters(ctx: Ctx, params: dict[str, str]) -> str:
    shown = scope_page(ctx)
    agents = " ".join(link(url("/memories", agent=s.agent_id), s.agent_id)
                      for s in shown.scopes if s.agent_id)
    agents += scope_nav("/memories", shown, **params)
    checked = " checked" if params["forgotten"] else ""
    return (
        f'<form method="get" action="/memories"><p>'
        f'Agent <input type="text" name="agent" value="{e(params["agent"])}" size=14> '
        f"Type {select('type', TYPES, params['type'])} "
        f"Tier {select('tier', TIERS, params['tier'])} "
        f'Channel <input type="text" name="channel" value="{e(params["channel"])}" size=14> '
        f'Source <input type="text" name="source" value="{e(params["source"])}" size=10> '
        f'User <input type="text" name="user" value="{e(params["user"])}" size=10> '
        f'<label><input type="checkbox" name="forgotten" value="1"{checked}> forgotten too'
        f"</label> <button>Filter</button></p></form>"
        f'<p class="muted">An agent sees its own memories (its end users\' included) and the '
        f"shared ones; empty = shared only. User: one end user's memories. Source "
        f"\"capture\": the turns the sidecar captured. Agents: "
        f"{agents or 'none yet'}</p>")


def _row(m: Memory) -> list[str]:
    gone = ' <span class="tag">forgotten</span>' if m.forgotten else ""
    return [link(url("/memory", id=m.id), _short(m.content), free_text=True) + gone,
            e(m.type.label), e(m.tier.name.lower()), scope(m), ident(m.channel_id),
            f"{m.importance:.2f}", e(when(m.updated_at))]


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
