"""Stand-ins for the [retrieval] and [vault] sections until their owners' dataclasses land.

They name the knobs of the retrieval issue (3) and the vault issue (6) so those sections are
validated (unknown keys are errors) today. Their rules (meaning, range) live in
``sidecar/config/schema.py`` (RETRIEVAL_RULES, VAULT_RULES), so swapping in the real
dataclass is a change of import there.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    rrf_k: int = 60
    importance_boost: float = 0.005  # alpha
    recency_boost: float = 0.005  # beta
    recency_half_life_days: float = 30.0
    graph_seed_threshold: float = 0.8
    graph_seed_limit: int = 20
    max_graph_depth: int = 2
    ef_search: int = 64


DEFAULT_NOISE_PHRASES: tuple[str, ...] = (
    "tick marker", "heartbeat", "runtime snapshot", "check-in", "burst tick", "no changes",
    "nothing to report", "status unchanged", "routine scan",
)


@dataclass(frozen=True, slots=True)
class VaultConfig:
    noise_gate: bool = True
    noise_phrases: tuple[str, ...] = DEFAULT_NOISE_PHRASES
    length_gate: bool = True
    max_chars: int = 1200
    pii_gate: bool = True
    duplicate_gate: bool = True
    duplicate_threshold: float = 0.95
    duplicate_numbers_must_match: bool = True
    max_memories_per_scope: int = 0
    topic_upsert: bool = True
    snapshot_canon_limit: int = 12
    snapshot_register_limit: int = 8
    snapshot_max_chars: int = 4000
    stale_after_days: float = 90.0
    stale_max_importance: float = 0.4
    consolidation_floor: float = 0.85
