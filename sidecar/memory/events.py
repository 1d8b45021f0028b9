"""Change notifications from the write path to in-memory indexes (vector, lexical, graph...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from sidecar.records import Edge, Memory


class MemoryListener(Protocol):
    """Called after the change is committed, in commit order."""

    def memories_stored(self, memories: Sequence[Memory], embeddings: np.ndarray) -> None: ...

    def memories_forgotten(self, memories: Sequence[Memory]) -> None: ...

    def edges_changed(self, added: Sequence[Edge], removed: Sequence[Edge]) -> None: ...


class Listeners:
    def __init__(self) -> None:
        self._items: list[MemoryListener] = []

    def add(self, listener: MemoryListener) -> None:
        self._items.append(listener)

    def stored(self, memories: Sequence[Memory], embeddings: np.ndarray) -> None:
        for listener in self._items:
            listener.memories_stored(memories, embeddings)

    def forgotten(self, memories: Sequence[Memory]) -> None:
        for listener in self._items:
            listener.memories_forgotten(memories)

    def edges(self, added: Sequence[Edge], removed: Sequence[Edge]) -> None:
        for listener in self._items:
            listener.edges_changed(added, removed)
