"""Updates deliver the new fact: a superseded memory gives way to its successor.

Memory B supersedes memory A when an UPDATES or CONTRADICTS edge goes from B (the source)
to A (the target); the edge's direction decides, not the memories' ages. A candidate that a
live memory supersedes is replaced, at its place in the order, by the newest memory of its
chain of successors, so the stale text is never injected in place of the new one. A
candidate that supersedes a memory still in view in the channel is an update: its line says
"(updated)" and the semantic dedup never drops it against the text it replaces.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import replace

import numpy as np

from sidecar.injection.types import Candidate
from sidecar.records import Memory, Relation, Viewer
from sidecar.retrieval.contract import cosine_of

SUPERSEDING = frozenset((Relation.UPDATES, Relation.CONTRADICTS))
# Successor chains followed at most this many edges deep.
MAX_HOPS = 8

# (live source memory, target id) of the edges of some relations into some memories: the
# retrieval engine's in-memory graph and mirror (``Retriever.pointing_to``).
PointingTo = Callable[[Sequence[str], Container[Relation]], list[tuple[Memory, str]]]
EmbeddingOf = Callable[[str], np.ndarray | None]


def resolve(candidates: list[Candidate], in_view: set[str], pointing_to: PointingTo,
            embedding_of: EmbeddingOf, viewer: Viewer, query: np.ndarray) -> list[Candidate]:
    """``candidates`` with superseded memories replaced and updates marked; ``in_view``: the
    ids the blocks in view carry."""
    newest = successors([*(c.memory.id for c in candidates), *sorted(in_view)], pointing_to,
                        viewer)
    if not newest:
        return candidates
    updates = {newest[mid].id for mid in in_view if mid in newest}
    return apply(candidates, in_view, newest, updates, embedding_of, query)


def successors(ids: Sequence[str], pointing_to: PointingTo,
               viewer: Viewer) -> dict[str, Memory]:
    """For each of ``ids`` superseded by a live memory the agent may see: the newest memory at
    the end of its chain of successors (several successors: the most recently updated)."""
    direct: dict[str, list[Memory]] = {}
    seen = set(ids)
    frontier = set(ids)
    for _ in range(MAX_HOPS):
        if not frontier:
            break
        found = pointing_to(sorted(frontier), SUPERSEDING)
        frontier = set()
        for source, target_id in found:
            if not source.offered_to(viewer):  # live memories only: forgotten are gone
                continue
            direct.setdefault(target_id, []).append(source)
            if source.id not in seen:
                seen.add(source.id)
                frontier.add(source.id)
    return {mid: _newest(mid, direct) for mid in ids if mid in direct}


def _newest(target: str, direct: Mapping[str, list[Memory]]) -> Memory:
    seen = {target}
    current = max(direct[target], key=lambda m: (m.updated_at, m.seq))
    while current.id in direct and current.id not in seen:
        seen.add(current.id)
        current = max(direct[current.id], key=lambda m: (m.updated_at, m.seq))
    return current


def apply(candidates: list[Candidate], in_view: set[str], newest: Mapping[str, Memory],
          superseded_in_view: set[str], embedding_of: EmbeddingOf,
          query: np.ndarray) -> list[Candidate]:
    """Replace superseded candidates by their newest successor and mark updates.

    ``superseded_in_view``: ids of successors (at the end of their chain) of memories still in
    view. A successor whose embedding is gone (forgotten meanwhile) leaves the candidate out.
    """
    out: list[Candidate] = []
    for c in candidates:
        successor = newest.get(c.memory.id)
        if successor is not None and successor.id != c.memory.id:
            embedding = embedding_of(successor.id)
            if embedding is None:
                continue
            c = replace(c, memory=successor, embedding=embedding,
                        cosine=cosine_of(embedding @ query))
        if c.memory.id in superseded_in_view and c.memory.id not in in_view:
            c = replace(c, is_update=True)
        out.append(c)
    return out
