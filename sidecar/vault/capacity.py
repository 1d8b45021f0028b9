"""Capacity gate: at most ``limit`` live memories per scope (agent_id; '' = shared).

Captures never make an explicit write fail: a write that is not a capture, into a full
scope, first erases the scope's oldest live captures to make room (``MakeRoom``, the
eraser's); only a scope without enough captures refuses it."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from sidecar.errors import ResourceExhausted
from sidecar.records import CAPTURE_SOURCE, Memory, MemoryDraft
from sidecar.redact import echo
from sidecar.store.memories import MemoryRepo
from sidecar.store.vault_repo import VaultRepo
from sidecar.vault import reasons
from sidecar.vault.duplicates import is_new

log = logging.getLogger(__name__)

# Erase the scope's (agent_id) n oldest live captures inside the write; False: it has fewer.
MakeRoom = Callable[[str, int], bool]


class CapacityGate:
    def __init__(self, memories: MemoryRepo, vault: VaultRepo, limit: int,
                 room: MakeRoom | None = None) -> None:
        self.memories = memories
        self.vault = vault
        self.limit = limit
        self.room = room

    def check(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> Memory | None:
        if not is_new(self.memories, draft):
            return None  # updates never grow a scope
        live = self.vault.count_live(draft.agent_id)
        if live >= self.limit and not self._made_room(draft, live - self.limit + 1):
            scope = echo(draft.agent_id) if draft.agent_id else "shared"
            log.info("write rejected", extra={"reason": reasons.CAPACITY, "field": field})
            raise ResourceExhausted(
                f"{field}: scope {scope} already holds {self.limit} live memories "
                "(vault.max_memories_per_scope); forget or consolidate some first",
                reason=reasons.CAPACITY, field=f"{field}.agent_id",
            )
        return None

    def _made_room(self, draft: MemoryDraft, needed: int) -> bool:
        return (self.room is not None and draft.source != CAPTURE_SOURCE
                and self.room(draft.agent_id, needed))
