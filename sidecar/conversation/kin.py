"""The focus's search for its anchors (``focus.kin_search``), remembered while nothing it
reads changed.

A conversation's anchors stay the same for several turns, and where the writer's order says
little the focus searches for them on every one of those turns. ``KinMemo`` keeps what that
search found per (anchors, viewer) with the engine's change token
(``Retriever.changes``) read before and after it, and gives it again while the token is the
same: the token moves with every write, forget, erasure, scope load or eviction, edge and
model change, and holds the retrieval config, so a kept result is what the same search
would find now. The key holds the whole viewer (agent, user, channel, shared), so one
viewer's result is never another's. docs/decisions/0032 has the measurements.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from sidecar.conversation.focus import kin_search
from sidecar.records import Memory, Viewer
from sidecar.retrieval.contract import Retriever

# Searches kept (least recently used out first): a few per active conversation.
KEPT = 512

Key = tuple[tuple[str, ...], Viewer]


class KinMemo:
    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._lock = threading.Lock()
        self._found: OrderedDict[Key, tuple[object, list[Memory]]] = OrderedDict()

    def search(self, anchors: Sequence[Memory], rows: np.ndarray, retriever: Retriever,
               viewer: Viewer) -> list[Memory]:
        """``focus.kin_search``, remembered."""
        key = (tuple(m.id for m in anchors), viewer)
        before = retriever.changes()
        if before is not None:
            with self._lock:
                kept = self._found.get(key)
                if kept is not None and kept[0] == before:
                    self._found.move_to_end(key)
                    return list(kept[1])
        found = kin_search(anchors, rows, retriever, viewer)
        if before is not None and retriever.changes() == before:  # nothing changed meanwhile
            with self._lock:
                self._found[key] = (before, list(found))
                self._found.move_to_end(key)
                while len(self._found) > self._kept:
                    self._found.popitem(last=False)
        return found

    def __len__(self) -> int:
        return len(self._found)
