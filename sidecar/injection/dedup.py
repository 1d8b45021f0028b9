"""Dedup in the order of the design: (a) id in cooldown (carried by a block still in view),
(b) id already in this batch, (c) cosine above ``semantic_threshold`` against the memories
of the blocks in view or a candidate kept before it in this batch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from kernels.dedup import buffer_max, greedy_unique
from sidecar.injection.state import ChannelState, Injected
from sidecar.injection.trace import DropReason
from sidecar.injection.types import Candidate
from sidecar.records import Memory

FreshCheck = Callable[[dict[str, tuple[Memory, Injected]]], set[str]]


@dataclass(frozen=True, slots=True)
class Deduped:
    kept: list[Candidate]
    by_id: int
    semantic: int
    dropped: list[tuple[Candidate, DropReason]]


def dedup(candidates: list[Candidate], state: ChannelState, view: frozenset[int],
          threshold: float, fresh: FreshCheck) -> Deduped:
    """``candidates`` in priority order (pinned first, then by score); order is kept.
    ``view``: the turns of the channel's blocks the agent still holds."""
    cooling: dict[str, tuple[Memory, Injected]] = {}
    for c in candidates:
        seen = state.in_view(c.memory.id, view)
        if seen is not None:
            cooling[c.memory.id] = (c.memory, seen)
    updated = fresh(cooling) if cooling else set()
    dropped: list[tuple[Candidate, DropReason]] = []
    taken: set[str] = set()
    survivors: list[Candidate] = []
    for c in candidates:
        mid = c.memory.id
        if mid in cooling and mid not in updated:  # (a)
            dropped.append((c, DropReason.COOLDOWN))
        elif mid in taken:  # (b)
            dropped.append((c, DropReason.DUPLICATE))
        else:
            taken.add(mid)
            survivors.append(replace(c, is_update=True) if mid in updated else c)
    by_id = len(dropped)
    if not survivors:
        return Deduped(kept=[], by_id=by_id, semantic=0, dropped=dropped)
    keep = _semantic_keep(survivors, state.view_buffer(view), threshold)
    kept = [c for c, k in zip(survivors, keep, strict=True) if k]
    dropped.extend((c, DropReason.SEMANTIC) for c, k in zip(survivors, keep, strict=True)
                   if not k)
    return Deduped(kept=kept, by_id=by_id, semantic=len(survivors) - len(kept),
                   dropped=dropped)


def _semantic_keep(survivors: list[Candidate], buffer: np.ndarray,
                   threshold: float) -> np.ndarray:
    """(c): against the buffer (updates exempt: they are meant to come back), then greedy
    within the batch so no two kept candidates are above the threshold."""
    rows = np.vstack([c.embedding for c in survivors]).astype(np.float32, copy=False)
    eligible = np.ones(len(survivors), dtype=np.bool_)
    if buffer.shape[0]:
        near = buffer_max(rows, buffer) > threshold
        updates = np.fromiter((c.is_update for c in survivors), dtype=np.bool_,
                              count=len(survivors))
        eligible = ~near | updates
    return greedy_unique(rows, eligible, threshold)
