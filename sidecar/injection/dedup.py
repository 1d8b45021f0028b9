"""Dedup in the order of the design: (a) id in cooldown (carried by a block still in view),
(b) id already in this batch, (c) cosine above ``semantic_threshold`` against the memories
of the blocks in view or a candidate kept before it in this batch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from kernels.dedup import buffer_max, greedy_unique
from sidecar.injection.state import ChannelState, Injected
from sidecar.injection.trace import DropReason, TracedDrop, traced_drop
from sidecar.injection.types import Candidate
from sidecar.records import Memory

FreshCheck = Callable[[dict[str, tuple[Memory, Injected]]], set[str]]


@dataclass(frozen=True, slots=True)
class Deduped:
    kept: list[Candidate]
    by_id: int
    semantic: int
    dropped: list[TracedDrop]  # each with the turn or memory that explains it


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
    dropped: list[TracedDrop] = []
    taken: set[str] = set()
    survivors: list[Candidate] = []
    for c in candidates:
        mid = c.memory.id
        if mid in cooling and mid not in updated:  # (a)
            dropped.append(traced_drop(c, DropReason.COOLDOWN, shown_in_turn=cooling[mid][1].turn))
        elif mid in taken:  # (b)
            dropped.append(traced_drop(c, DropReason.DUPLICATE))
        else:
            taken.add(mid)
            survivors.append(replace(c, is_update=True) if mid in updated else c)
    by_id = len(dropped)
    if not survivors:
        return Deduped(kept=[], by_id=by_id, semantic=0, dropped=dropped)
    buffer, buffer_ids = state.view_buffer(view), state.view_buffer_ids(view)
    keep = _semantic_keep(survivors, buffer, threshold)
    kept = [c for c, k in zip(survivors, keep, strict=True) if k]
    dropped.extend(traced_drop(c, DropReason.SEMANTIC,
                               duplicate_of=_nearest(c, buffer, buffer_ids, survivors[:i], keep))
                   for i, (c, k) in enumerate(zip(survivors, keep, strict=True)) if not k)
    return Deduped(kept=kept, by_id=by_id, semantic=len(survivors) - len(kept),
                   dropped=dropped)


def kept_first(candidates: list[Candidate], state: ChannelState, view: frozenset[int],
               threshold: float, n: int) -> tuple[int, int]:
    """How many of ``candidates`` (in order) it takes to hold the first ``n`` (0: all) that
    ``dedup`` keeps when they head its batch (one in view counted as dropped, as it is unless
    updated), and how many of those it keeps: (all of them, those kept) when fewer are
    kept."""
    fresh = [i for i, c in enumerate(candidates) if state.in_view(c.memory.id, view) is None]
    buffer = state.view_buffer(view)
    size = n if n > 0 else len(fresh)
    while True:  # the greedy keeps a prefix as it keeps the whole: look no further than needed
        head = fresh[:size]
        keep = (_semantic_keep([candidates[i] for i in head], buffer, threshold).tolist()
                if head else [])
        kept = [i for i, k in zip(head, keep, strict=True) if k]
        if 0 < n <= len(kept):
            return kept[n - 1] + 1, n
        if size >= len(fresh):
            return len(candidates), len(kept)
        size *= 2


def _nearest(c: Candidate, buffer: np.ndarray, buffer_ids: list[str],
             before: list[Candidate], keep: np.ndarray) -> str:
    """The memory ``c`` was too close to: the most similar of the blocks in view and of the
    candidates kept before it."""
    ids = buffer_ids + [b.memory.id for i, b in enumerate(before) if keep[i]]
    rows = [buffer] if buffer.shape[0] else []
    rows += [b.embedding[None, :] for i, b in enumerate(before) if keep[i]]
    if not ids:
        return ""
    cosines = np.vstack(rows).astype(np.float32, copy=False) @ c.embedding.astype(np.float32)
    return ids[int(np.argmax(cosines))]


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
