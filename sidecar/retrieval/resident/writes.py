"""Writes go where their scope is: applied to the indexes when the scope is held, queued
behind its load when it is being loaded (applied after the load's rows, in order), not
applied when it is cold (the store has the row; it is read with the scope). A memory moved
to a scope not held leaves the indexes. Call inside ``ResidentScopes.reading``."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from sidecar.records import Memory
from sidecar.retrieval.resident.keys import ScopeKey, scope_of
from sidecar.retrieval.resident.loader import ScopeIndexes
from sidecar.retrieval.resident.lru import ResidentScopes, Route


def stored(resident: ResidentScopes, indexes: ScopeIndexes, memories: Sequence[Memory],
           embeddings: np.ndarray) -> None:
    for key, where in by_scope(memories).items():
        batch = [memories[i] for i in where]
        rows = embeddings[where]
        route = resident.route(key, partial(indexes.put, key, batch, rows, None))
        if route is Route.APPLY:
            indexes.put(key, batch, rows, None)
        else:
            indexes.drop(batch)  # held under another scope before: no longer there


def forgotten(resident: ResidentScopes, indexes: ScopeIndexes,
              memories: Sequence[Memory]) -> None:
    for key, where in by_scope(memories).items():
        batch = [memories[i] for i in where]
        if resident.route(key, partial(indexes.drop, batch)) is not Route.DEFERRED:
            indexes.drop(batch)


def by_scope(memories: Sequence[Memory]) -> dict[ScopeKey, list[int]]:
    """The positions of ``memories`` per scope, in order."""
    where: dict[ScopeKey, list[int]] = {}
    for i, m in enumerate(memories):
        where.setdefault(scope_of(m), []).append(i)
    return where
