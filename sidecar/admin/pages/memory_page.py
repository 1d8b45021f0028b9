"""/memory?id=: one memory with its version history and edges; forget and restore."""

from __future__ import annotations

from sidecar.admin.context import Ctx
from sidecar.admin.forms import scope
from sidecar.admin.html import button_form, e, ident, link, notice, page, prose, table, when
from sidecar.admin.web import Response, redirect, url
from sidecar.errors import NotFound
from sidecar.records import Edge, Memory, MemoryDraft
from sidecar.redact import echo

ADMIN_SOURCE = "admin-page"
SHOWN = 100  # versions and edges listed on the page, at most


def show(ctx: Ctx) -> Response:
    memory = _memory(ctx, ctx.request.arg("id"))
    services = ctx.services
    versions, total = services.memories.memories.versions.latest(memory.id, SHOWN)
    edges = services.memories.edges.touching([memory.id], SHOWN + 1)
    action = (button_form("/memory/restore", "Restore", ctx.csrf, id=memory.id)
              if memory.forgotten else
              button_form("/memory/forget", "Forget", ctx.csrf, id=memory.id))
    body = (notice(ctx.request.arg("done")) + _fields(memory) + f"<p>{action}</p>"
            + "<h2>Version history</h2>"
            + table(("Version", "Event", "When", "By", "Content", "Importance", "Tier"),
                    ([str(v.version), e(v.event), e(when(v.recorded_at)), ident(v.actor),
                      prose(v.content), f"{v.importance:.2f}", e(v.tier.name.lower())]
                     for v in versions))
            + _more(total - len(versions), "older versions")
            + "<h2>Edges</h2>"
            + table(("From", "Relation", "To", "Weight"), (_edge(x) for x in edges[:SHOWN]),
                    "No edges.")
            + _more(len(edges) - SHOWN, "more edges", exact=False))
    return page("Memory", body, here="/memories")


def _more(count: int, what: str, exact: bool = True) -> str:
    if count <= 0:
        return ""
    return f'<p class="muted">{count if exact else "More"} {what} not shown.</p>'


def forget(ctx: Ctx) -> Response:
    memory = _memory(ctx, ctx.request.arg("id"))
    ctx.services.memories.forget(memory.id, ADMIN_SOURCE, memory.agent_id)
    return redirect(url("/memory", id=memory.id, done="Forgotten."))


def restore(ctx: Ctx) -> Response:
    """A forgotten memory comes back as a new version with the same content (the write
    gates apply as for any write)."""
    memory = _memory(ctx, ctx.request.arg("id"))
    draft = MemoryDraft(id=memory.id, content=memory.content, type=memory.type,
                        importance=memory.importance, source=ADMIN_SOURCE,
                        channel_id=memory.channel_id, agent_id=memory.agent_id,
                        tier=memory.tier, topic_id=memory.topic_id, user_id=memory.user_id,
                        channel_private=memory.channel_private)
    stored = ctx.services.memories.upsert(draft).memory
    return redirect(url("/memory", id=stored.id, done="Restored."))


def _memory(ctx: Ctx, memory_id: str) -> Memory:
    found = ctx.services.memories.memories.get(memory_id) if memory_id else None
    if found is None:
        raise NotFound(f"no memory with id {echo(memory_id)}", field="id")
    return found


def _fields(m: Memory) -> str:
    rows = [("Id", ident(m.id)), ("Content", prose(m.content)), ("Type", e(m.type.label)),
            ("Tier", e(m.tier.name.lower())), ("Scope", scope(m)),
            ("Channel", ident(m.channel_id)), ("Source", ident(m.source)),
            ("Topic", ident(m.topic_id)),
            ("Importance", f"{m.importance:.2f}"), ("Version", str(m.version)),
            ("Created", e(when(m.created_at))), ("Updated", e(when(m.updated_at))),
            ("Injected", _accessed(m)),
            ("State", "forgotten" if m.forgotten else "live")]
    return table(("Field", "Value"), ([f"<b>{k}</b>", v] for k, v in rows))


def _accessed(m: Memory) -> str:
    if not m.last_accessed_at:
        return "never"
    times = "once" if m.access_count == 1 else f"{m.access_count} times"
    return f"{times}, last {e(when(m.last_accessed_at))}"


def _edge(edge: Edge) -> list[str]:
    return [link(url("/memory", id=edge.source_id), edge.source_id), e(edge.relation.name),
            link(url("/memory", id=edge.target_id), edge.target_id), f"{edge.weight:.2f}"]
