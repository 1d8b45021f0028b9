"""/injections: the channels with a trace, and one channel's timeline (?channel=).

A turn that injected something shows its whole story; a turn that injected nothing is one
line (a <details>: it opens without a script), so a long quiet stretch does not push the
turns that mattered off the screen.
"""

from __future__ import annotations

from sidecar.admin.context import Ctx, Services
from sidecar.admin.html import e, ident, link, page, prose, table, when
from sidecar.admin.web import Response, url
from sidecar.injection.trace import DropReason, TracedDrop, TracedItem, TraceTurn
from sidecar.records import Memory
from sidecar.retrieval.contract import cosine_of
from sidecar.story import FLOOR_SHOWN, best_first, plural, split_drops

COSINE = "Cosine to query"
LEGEND = ('<p class="muted">Cosine to query: between the memory and the query the turn searched '
          "with (its text, steered by the earlier turns of its Context line when it has one), "
          "what contextual_min_score, relative_floor and background_floor compare; score_floor "
          "compares the fused score. A near-duplicate is held back by its cosine to the memory "
          "it duplicates, compared with semantic_threshold.</p>")


def show(ctx: Ctx) -> Response:
    channel = ctx.request.arg("channel")
    form = (f'<form method="get" action="/injections"><p>Channel <input type="text" '
            f'name="channel" value="{e(channel)}" size=30> <button>Show timeline</button>'
            "</p></form>")
    if not channel:
        return page("Injections", form + _channels(ctx), here="/injections")
    turns = ctx.services.injector.trace.last(channel)
    ids = {i.memory_id for t in turns for i in t.injected} | {
        d.memory_id for t in turns for d in t.dropped} | {
        d.duplicate_of for t in turns for d in t.dropped if d.duplicate_of} | {
        m for t in turns for m in (*t.focus_anchors, *t.focus_offered)}
    memories = ctx.services.memories.memories.get_many(sorted(ids))
    quiet = sum(1 for t in turns if not t.injected)
    folded = f" {plural(quiet, 'turn')} that injected nothing folded to one line." if quiet \
        else ""
    body = form + (f"<p>{len(turns)} turns of channel <b>{ident(channel)}</b>, newest first."
                   f"{folded}</p>{LEGEND}"
                   if turns else '<p class="muted">No turns traced for this channel.</p>')
    body += "".join(_turn(t, memories, ctx.services) for t in reversed(turns))
    return page(f"Injections: {channel}", body, here="/injections")


def _channels(ctx: Ctx) -> str:
    rows = ([link(url("/injections", channel=c), c), ident(t.agent_id or "(shared)"), str(t.turn),
             e(when(t.at_us))] for c, t in ctx.services.injector.trace.channels())
    note = ('<p class="muted">The trace is kept in memory ([injection] trace_turns per '
            "channel): empty after a restart.</p>")
    return note + table(("Channel", "Agent", "Last turn", "At"), rows,
                        "No channel has injected since the sidecar started.")


def _turn(turn: TraceTurn, memories: dict[str, Memory], services: Services) -> str:
    """The turn's story: injected, held back and why, then the floor's best cuts (the rest
    collapsed); each group highest score first. A turn that injected nothing: one line that
    opens on the same story."""
    cut = f" (first {len(turn.query)} of {turn.query_chars} characters)" \
        if turn.query_chars > len(turn.query) else ""
    skip = f' · nothing injected: <span class="tag">{e(turn.skip_reason)}</span>' \
        if turn.skip_reason else ""
    held, floor = split_drops(turn.dropped, lambda d: d.reason is DropReason.FLOOR,
                              lambda d: d.score)
    story = (f"<p><b>Query</b>{e(cut)}: {prose(turn.query)}</p>" + _context(turn)
             + _focus(turn, memories)
             + f'<section class="injected"><h4>Injected ({len(turn.injected)})</h4>'
             + _table(("Memory", "Section", COSINE, "Fused score", "Source ranks"),
                      [_item(i, memories) for i in best_first(turn.injected, lambda i: i.score)])
             + f'</section><section class="held"><h4>Held back ({len(held)})</h4>'
             + _table(("Memory", "Reason", COSINE, "Fused score"),
                      [_drop(d, memories, services) for d in held])
             + "</section>" + _floor(floor, turn.dropped_omitted, memories, services))
    about = (f'{e(when(turn.at_us))} · agent {ident(turn.agent_id or "(shared)")}'
             f" · {turn.elapsed_us / 1000:.1f} ms")
    if not turn.injected:
        below = len(floor) + turn.dropped_omitted
        return (f'<details class="turn quiet" id="turn-{turn.turn}"><summary><b>Turn '
                f"{turn.turn}</b>{skip or ' · nothing injected'} · {len(held)} held back · "
                f'{below} below the floor · <span class="muted">{about}</span> · '
                f"{prose(turn.query)}</summary>{story}</details>")
    return (f'<div class="turn" id="turn-{turn.turn}"><h3>Turn {turn.turn}</h3>'
            f'<p class="muted">{about}{skip}</p>{story}</div>')


def _context(turn: TraceTurn) -> str:
    """What steered the turn's search: the earlier turns and their weights (query context)."""
    c = turn.context
    if not c.turns:
        return ""
    parts = ", ".join(f"turn {t} (terms x{terms:g}, vector x{vector:g}"
                      f"{', with its reply' if reply else ''})"
                      for t, terms, vector, reply in c.turns)
    return f'<p class="context"><b>Context</b>: {e(parts)} · gate {c.gate:.2f}</p>'


def _focus(turn: TraceTurn, memories: dict[str, Memory]) -> str:
    """The conversation's focus: the memories it was taken around, what it offered."""
    if not turn.focus_anchors:
        return ""
    around = ", ".join(_content(m, memories) for m in turn.focus_anchors)
    offered = ", ".join(_content(m, memories) for m in turn.focus_offered) or "nothing new"
    return f'<p class="focus"><b>Focus</b>: around {around} · offered {offered}</p>'


def _table(head: tuple[str, ...], rows: list[list[str]]) -> str:
    """The rows; nothing at all when there are none (the heading's count says 0)."""
    return table(head, rows) if rows else ""


def _floor(floor: list[TracedDrop], omitted: int, memories: dict[str, Memory],
           services: Services) -> str:
    """The best few cuts of the relevance floor; the others behind "N more below the floor"
    (a <details>: opens without a script)."""
    if not floor and not omitted:
        return ""
    head = ("Memory", "Reason", COSINE, "Fused score")
    shown, rest = floor[:FLOOR_SHOWN], floor[FLOOR_SHOWN:]
    more = ""
    if rest or omitted:
        kept = f" ({omitted} beyond the trace's {len(floor)} not kept)" if omitted else ""
        more = (f'<details class="floor-more"><summary>{len(rest) + omitted} more below the '
                f"floor{e(kept)}</summary>"
                + table(head, (_drop(d, memories, services) for d in rest),
                        "None kept by the trace.")
                + "</details>")
    return (f'<section class="floor"><h4>Below the relevance floor ({len(floor) + omitted})'
            "</h4>" + table(head, (_drop(d, memories, services) for d in shown)) + more
            + "</section>")


def _content(memory_id: str, memories: dict[str, Memory]) -> str:
    found = memories.get(memory_id)
    if found is None:
        return link(url("/memory", id=memory_id), memory_id)
    return link(url("/memory", id=memory_id), found.content[:100], free_text=True)


def _item(item: TracedItem, memories: dict[str, Memory]) -> list[str]:
    ranks = ", ".join(f"{e(r.name)} #{r.rank}" if r.rank else f"{e(r.name)} —"
                      for r in item.ranks) or "—"
    return [_content(item.memory_id, memories), e(item.section.name.lower()),
            f"{item.cosine:.3f}", f"{item.score:.4f}", ranks]


def _drop(drop: TracedDrop, memories: dict[str, Memory], services: Services) -> list[str]:
    return [_content(drop.memory_id, memories),
            f'<span class="tag">{e(drop.reason.value)}</span>{_why(drop, memories, services)}',
            f"{drop.cosine:.3f}", f"{drop.score:.4f}"]


def _why(drop: TracedDrop, memories: dict[str, Memory], services: Services) -> str:
    if drop.reason is DropReason.COOLDOWN and drop.shown_in_turn:
        return (f' <span class="why">still shown by <a href="#turn-{drop.shown_in_turn}">turn '
                f"{drop.shown_in_turn}</a></span>")
    if drop.reason is DropReason.SEMANTIC and drop.duplicate_of:
        return (' <span class="why">duplicates '
                f"{_content(drop.duplicate_of, memories)}"
                f"{_pair_cosine(drop.memory_id, drop.duplicate_of, services)}</span>")
    if drop.reason is DropReason.BUDGET:
        return ' <span class="why">over max_total or max_tokens</span>'
    if drop.reason is DropReason.CAPTURE_IN_VIEW:
        return ' <span class="why">captured in this channel, still in view</span>'
    return ""


def _pair_cosine(memory_id: str, other_id: str, services: Services) -> str:
    """`` (cosine 0.912 to it, compared with semantic_threshold)`` from the stored vectors as
    they are now; "" when either memory is gone."""
    a, b = services.retriever.embedding_of(memory_id), services.retriever.embedding_of(other_id)
    if a is None or b is None:
        return ""
    return f" (cosine {cosine_of(a @ b):.3f} to it, compared with semantic_threshold)"
