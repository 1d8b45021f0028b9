"""Capacity gate: at most ``limit`` live memories per scope (agent_id; '' = shared)."""

from __future__ import annotations

import logging

import numpy as np

from sidecar.errors import ResourceExhausted
from sidecar.records import Memory, MemoryDraft
from sidecar.redact import echo
from sidecar.store.memories import MemoryRepo
from sidecar.store.vault_repo import VaultRepo
from sidecar.vault import reasons
from sidecar.vault.duplicates import is_new

log = logging.getLogger(__name__)


class CapacityGate:
    def __init__(self, memories: MemoryRepo, vault: VaultRepo, limit: int) -> None:
        self.memories = memories
        self.vault = vault
        self.limit = limit

    def check(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> Memory | None:
        if not is_new(self.memories, draft):
            return None  # updates never grow a scope
        if self.vault.count_live(draft.agent_id) >= self.limit:
            scope = echo(draft.agent_id) if draft.agent_id else "shared"
            log.info("write rejected", extra={"reason": reasons.CAPACITY, "field": field})
            raise ResourceExhausted(
                f"{field}: scope {scope} already holds {self.limit} live memories "
                "(vault.max_memories_per_scope); forget or consolidate some first",
                reason=reasons.CAPACITY, field=f"{field}.agent_id",
            )
        return None
