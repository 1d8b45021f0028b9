"""Topic upserts: a REGISTER write whose topic_id names a live register of the same scope
updates that register in place (version + 1) instead of adding a paraphrase."""

from __future__ import annotations

import logging
from dataclasses import replace

from sidecar.records import MemoryDraft, Tier
from sidecar.store.vault_repo import VaultRepo

log = logging.getLogger(__name__)


class TopicResolver:
    """A DraftResolver (sidecar.memory.service): retargets the draft to the register's id."""

    def __init__(self, vault: VaultRepo) -> None:
        self.vault = vault

    def resolve(self, draft: MemoryDraft, field: str) -> MemoryDraft:
        if draft.id or draft.tier != Tier.REGISTER or not draft.topic_id:
            return draft
        register = self.vault.live_register(draft)
        if register is None:
            return draft
        log.debug("topic upsert", extra={"field": field, "memory_id": register.id})
        return replace(draft, id=register.id)
