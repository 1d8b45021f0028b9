"""Idempotent imports: whether a draft would change its stored memory, and the new row a
draft makes (keeping the server-owned fields of a restored one)."""

from __future__ import annotations

import numpy as np

from sidecar.memory.validation import resolve_importance
from sidecar.records import Memory, MemoryDraft


def unchanged(stored: Memory, draft: MemoryDraft) -> bool:
    """True when writing ``draft`` over ``stored`` would change no field (a resent item).

    Importance is compared as the float32 the API carries."""
    restored = draft.restored
    return (
        (stored.content, stored.type, stored.source, stored.channel_id, stored.agent_id,
         stored.tier, stored.topic_id, stored.forgotten, stored.user_id, stored.channel_private)
        == (draft.content, draft.type, draft.source, draft.channel_id, draft.agent_id,
            draft.tier, draft.topic_id, restored is not None and restored.forgotten,
            draft.user_id, draft.channel_private)
        and np.float32(stored.importance) == np.float32(resolve_importance(draft))
        and (restored is None or (stored.version, stored.created_at, stored.updated_at)
             == (restored.version, restored.created_at, restored.updated_at))
    )


def new_memory(draft: MemoryDraft, memory_id: str, importance: float, now_us: int) -> Memory:
    """The first row of a memory: version 1 stamped ``now_us``, or the restored fields."""
    restored = draft.restored
    created, updated = (now_us, now_us) if restored is None else (restored.created_at,
                                                                  restored.updated_at)
    return Memory(
        id=memory_id, content=draft.content, type=draft.type, importance=importance,
        created_at=created, updated_at=updated, last_accessed_at=0, access_count=0,
        source=draft.source, channel_id=draft.channel_id, agent_id=draft.agent_id,
        forgotten=restored is not None and restored.forgotten,
        version=1 if restored is None else restored.version, tier=draft.tier,
        topic_id=draft.topic_id, user_id=draft.user_id, channel_private=draft.channel_private,
    )
