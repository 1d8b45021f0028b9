"""Rows for the store contract suites (tests/store/test_contract_*.py)."""

from __future__ import annotations

import numpy as np

from sidecar.injection.state_repo import BufferRow, InjectedRow, Saved
from sidecar.records import Memory, MemoryType, Tier

DIM = 8


def memory(memory_id: str, *, updated_at: int = 1, importance: float = 0.5,
           agent_id: str = "", tier: Tier = Tier.CANON, topic_id: str = "",
           type: MemoryType = MemoryType.FACT, channel_id: str = "") -> Memory:
    return Memory(id=memory_id, content=f"content of {memory_id}", type=type,
                  importance=importance, created_at=updated_at, updated_at=updated_at,
                  last_accessed_at=0, access_count=0, source="test", channel_id=channel_id,
                  agent_id=agent_id, forgotten=False, version=1, tier=tier, topic_id=topic_id)


def vector(seed: int) -> np.ndarray:
    values = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return values / np.linalg.norm(values)


def saved_turn(turn: int, ids: list[str], held: frozenset[int] | None = None) -> Saved:
    return Saved(turn=turn, injected=[InjectedRow(i, turn, 1, turn * 10) for i in ids],
                 buffer=[BufferRow(i, turn, vector(turn)) for i in ids],
                 block=(turn, f"digest{turn}"), reply={"turn": turn}, keep=None, held=held)
