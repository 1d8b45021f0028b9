"""The memory-injection settings (V2 design + persistence ADR), one immutable snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sidecar.records import MemoryType


@dataclass(frozen=True, slots=True)
class MemoryInjectionConfig:
    enabled: bool = True
    search_limit: int = 20
    # Cosine floor between the turn text and a contextual candidate: 0.25 keeps ~80% of
    # LongMemEval evidence turns and ~3% of unrelated turns (bench/cosine_floor.py, README).
    contextual_min_score: float = 0.25
    # Relative floors (0 = off): keep a hit whose cosine >= relative_floor x the turn's best
    # cosine OR whose fused score >= score_floor x the best fused score. 0.3 on the fused score
    # drops 7% of the unrelated hits and no evidence on LongMemEval; any relative cosine floor
    # costs evidence there (bench/relevance_floor.py, docs/injection.md).
    relative_floor: float = 0.0
    score_floor: float = 0.3
    semantic_threshold: float = 0.85
    context_window_depth: int = 10
    ambient_enabled: bool = False
    pinned_types: tuple[MemoryType, ...] = ()
    pinned_limit: int = 3
    pinned_sort: str = "recent"  # "recent" | "importance"
    max_total: int = 25
    max_tokens: int = 0  # 0 = no token budget
    max_injected_blocks_in_history: int = 3
    pinned_source: str = "types"  # "types" | "snapshot" (vault)


class InjectionConfigSource(Protocol):
    """Gives the effective config of an agent; implementations swap snapshots atomically."""

    def injection_for(self, agent_id: str) -> MemoryInjectionConfig: ...


class StaticInjectionConfig:
    """Every agent gets the same config (used until a config file is loaded)."""

    def __init__(self, config: MemoryInjectionConfig | None = None) -> None:
        self.config = config or MemoryInjectionConfig()

    def injection_for(self, agent_id: str) -> MemoryInjectionConfig:
        return self.config
