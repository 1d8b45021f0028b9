"""A committed reply as JSON, so a retry of the last turn gets it back after a restart."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from sidecar.injection.types import InjectedItem, Injection, InjectStats, Section
from sidecar.records import Memory

Fetch = Callable[[Sequence[str]], Mapping[str, Memory]]


def to_json(reply: Injection) -> dict[str, object]:
    return {
        "turn": reply.turn, "block": reply.block, "skip_reason": reply.skip_reason,
        "items": [[i.memory.id, int(i.section), i.content, i.score, i.cosine, i.is_update,
                   i.memory.version] for i in reply.items],
    }


def from_json(saved: Mapping[str, object], fetch: Fetch) -> Injection:
    """The reply with each item's memory as stored now, at the version that was injected
    (an item whose memory was deleted since is left out)."""
    rows = saved["items"]
    assert isinstance(rows, list)
    memories = fetch([str(row[0]) for row in rows])
    items = [InjectedItem(memory=replace(memories[mid], version=int(version)),
                          section=Section(section), content=str(content), score=float(score),
                          cosine=float(cosine), is_update=bool(update))
             for mid, section, content, score, cosine, update, version in rows
             if mid in memories]
    return Injection(block=str(saved["block"]), items=items, stats=InjectStats(),
                     skip_reason=str(saved["skip_reason"]), turn=int(str(saved["turn"])))
