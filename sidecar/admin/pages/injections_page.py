"""/injections: the channels with a trace, and one channel's timeline (?channel=)."""

from __future__ import annotations

from sidecar.admin.context import Ctx
from sidecar.admin.html import e, link, page, table, when
from sidecar.admin.web import Response, url
from sidecar.injection.trace import DropReason, TracedDrop, TracedItem, TraceTurn
from sidecar.records import Memory
from sidecar.story import FLOOR_SHOWN, best_first, split_drops


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
        d.duplicate_of for t in turns for d in t.dropped if d.duplicate_of}
    memories = ctx.services.memories.memories.get_many(sorted(ids))
    body = form + (f"<p>{len(turns)} turns of channel <b>{e(channel)}</b>, newest first.</p>"
                   if turns else '<p class="muted">No turns traced for this channel.</p>')
    body += "".join(_turn(t, memories) for t in reversed(turns))
    return page(f"Injections: {channel}", body, here="/injections")


def _channels(ctx: Ctx) -> str:
    rows = ([link(url("/injections", channel=c), c), e(t.agent_id or "(shared)"), str(t.turn),
             e(when(t.at_us))] for c, t in ctx.services.injector.trace.channels())
    note = ('<p class="muted">The trace is kept in memory ([injection] trace_turns per '
            "channel): empty after a restart.</p>")
    return note + table(("Channel", "Agent", "Last turn", "At"), rows,
                        "No channel has injected since the sidecar started.")


def _turn(turn: TraceTurn, memories: dict[str, Memory]) -> str:
    """The turn's story: injected, held back and why, then the floor's best cuts (the rest
    collapsed); each group highest score first."""
    cut = f" (first {len(turn.query)} of {turn.query_chars} characters)" \
        if turn.query_chars > len(turn.query) else ""
    skip = f' · nothing injected: <span class="tag">{e(turn.skip_reason)}</span>' \
        if turn.skip_reason else ""
    held, floor = split_drops(turn.dropped, lambda d: d.reason is DropReason.FLOOR,
                              lambda d: d.score)
    return (f'<div class="turn" id="turn-{turn.turn}"><h3>Turn {turn.turn}</h3>'
            f'<p class="muted">{e(when(turn.at_us))} · agent {e(turn.agent_id or "(shared)")}'
            f" · {turn.elapsed_us / 1000:.1f} ms{skip}</p>"
            f"<p><b>Query</b>{e(cut)}: {e(turn.query)}</p>" + _context(turn)
            + f'<section class="injected"><h4>Injected ({len(turn.injected)})</h4>'
            + table(("Memory", "Section", "Cosine", "Fused score", "Source ranks"),
                    (_item(i, memories) for i in best_first(turn.injected, lambda i: i.score)),
                    "Nothing injected.")
            + f'</section><section class="held"><h4>Held back ({len(held)})</h4>'
            + table(("Memory", "Reason", "Cosine", "Fused score"),
                    (_drop(d, memories) for d in held), "Nothing held back.")
            + "</section>" + _floor(floor, turn.dropped_omitted, memories) + "</div>")


def _context(turn: TraceTurn) -> str:
    """What steered the turn's search: the earlier turns and their weights (query context)."""
    c = turn.context
    if not c.turns and not c.similarity:
        return ""
    parts = ", ".join(f"turn {t} (terms x{terms:g}, vector x{vector:g}"
                      f"{', with its reply' if reply else ''})"
                      for t, terms, vector, reply in c.turns)
    return (f'<p class="context"><b>Context</b>: {e(parts or "none")} · cosine to the earlier '
            f"turns {c.similarity:.2f} · gate {c.gate:.2f}</p>")


def _floor(floor: list[TracedDrop], omitted: int, memories: dict[str, Memory]) -> str:
    """The best few cuts of the relevance floor; the others behind "N more below the floor"
    (a <details>: opens without a script)."""
    if not floor and not omitted:
        return ""
    head = ("Memory", "Reason", "Cosine", "Fused score")
    shown, rest = floor[:FLOOR_SHOWN], floor[FLOOR_SHOWN:]
    more = ""
    if rest or omitted:
        kept = f" ({omitted} beyond the trace's {len(floor)} not kept)" if omitted else ""
        more = (f'<details class="floor-more"><summary>{len(rest) + omitted} more below the '
                f"floor{e(kept)}</summary>"
                + table(head, (_drop(d, memories) for d in rest), "None kept by the trace.")
                + "</details>")
    return (f'<section class="floor"><h4>Below the relevance floor ({len(floor) + omitted})'
            "</h4>" + table(head, (_drop(d, memories) for d in shown)) + more + "</section>")


def _content(memory_id: str, memories: dict[str, Memory]) -> str:
    found = memories.get(memory_id)
    text = found.content if found is not None else memory_id
    return link(url("/memory", id=memory_id), text[:100])


def _item(item: TracedItem, memories: dict[str, Memory]) -> list[str]:
    ranks = ", ".join(f"{e(r.name)} #{r.rank}" if r.rank else f"{e(r.name)} —"
                      for r in item.ranks) or "—"
    return [_content(item.memory_id, memories), e(item.section.name.lower()),
            f"{item.cosine:.3f}", f"{item.score:.4f}", ranks]


def _drop(drop: TracedDrop, memories: dict[str, Memory]) -> list[str]:
    return [_content(drop.memory_id, memories),
            f'<span class="tag">{e(drop.reason.value)}</span>{_why(drop, memories)}',
            f"{drop.cosine:.3f}", f"{drop.score:.4f}"]


def _why(drop: TracedDrop, memories: dict[str, Memory]) -> str:
    if drop.reason is DropReason.COOLDOWN and drop.shown_in_turn:
        return (f' <span class="why">still shown by <a href="#turn-{drop.shown_in_turn}">turn '
                f"{drop.shown_in_turn}</a></span>")
    if drop.reason is DropReason.SEMANTIC and drop.duplicate_of:
        return (' <span class="why">duplicates '
                f"{_content(drop.duplicate_of, memories)}</span>")
    if drop.reason is DropReason.BUDGET:
        return ' <span class="why">over max_total or max_tokens</span>'
    return ""
