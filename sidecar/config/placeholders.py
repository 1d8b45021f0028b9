"""Stand-ins for the [retrieval] and [vault] sections until their owners' dataclasses land.

They name the knobs of the retrieval issue (3) and the vault issue (6) so those sections are
validated (unknown keys are errors) today. Rules sit in field metadata, the way a section's own
dataclass can declare them. To replace one, see ``sidecar/config/schema.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.config.rules import knob


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    rrf_k: int = field(default=60, metadata=knob(
        "Reciprocal-rank-fusion constant k in 1/(k + rank).", ge=1, le=10_000))
    importance_boost: float = field(default=0.005, metadata=knob(
        "alpha: weight of a memory's importance added to its fused score.", ge=0, le=1))
    recency_boost: float = field(default=0.005, metadata=knob(
        "beta: weight of the recency decay added to the fused score.", ge=0, le=1))
    recency_half_life_days: float = field(default=30.0, metadata=knob(
        "Age (days) at which the recency decay has halved.", ge=0.001, le=36_500))
    graph_seed_threshold: float = field(default=0.8, metadata=knob(
        "Least importance of a memory used as a graph-traversal seed.", ge=0, le=1))
    graph_seed_limit: int = field(default=20, metadata=knob(
        "Most graph seeds per search.", ge=1, le=10_000))
    max_graph_depth: int = field(default=2, metadata=knob(
        "Edges followed from a seed (0 = no graph expansion).", ge=0, le=10))
    ef_search: int = field(default=64, metadata=knob(
        "HNSW ef at query time (recall vs latency).", ge=1, le=10_000))


DEFAULT_NOISE_PHRASES: tuple[str, ...] = (
    "tick marker", "heartbeat", "runtime snapshot", "check-in", "burst tick", "no changes",
    "nothing to report", "status unchanged", "routine scan",
)


@dataclass(frozen=True, slots=True)
class VaultConfig:
    noise_gate: bool = field(default=True, metadata=knob(
        "Reject tier=LOG writes and texts containing a noise phrase."))
    noise_phrases: tuple[str, ...] = field(default=DEFAULT_NOISE_PHRASES, metadata=knob(
        "Journal-only chatter the noise gate rejects (case-insensitive substrings)."))
    length_gate: bool = field(default=True, metadata=knob("Reject texts longer than max_chars."))
    max_chars: int = field(default=1200, metadata=knob(
        "Longest content the vault accepts (compress or split first).", ge=1))
    pii_gate: bool = field(default=True, metadata=knob(
        "Reject SSNs, Luhn-valid card numbers, passwords, API keys and tokens."))
    duplicate_gate: bool = field(default=True, metadata=knob(
        "Do not store a near-duplicate of a live memory of the same scope."))
    duplicate_threshold: float = field(default=0.95, metadata=knob(
        "Cosine at or above which a new memory is a near-duplicate.", ge=0, le=1))
    duplicate_numbers_must_match: bool = field(default=True, metadata=knob(
        "Two texts whose numbers differ are never duplicates."))
    max_memories_per_scope: int = field(default=0, metadata=knob(
        "Capacity gate: most live memories per scope (0 = unlimited).", ge=0))
    topic_upsert: bool = field(default=True, metadata=knob(
        "A REGISTER write with a known topic_id updates that register in place."))
    snapshot_canon_limit: int = field(default=12, metadata=knob(
        "Most canon memories in a snapshot.", ge=0))
    snapshot_register_limit: int = field(default=8, metadata=knob(
        "Most registers in a snapshot.", ge=0))
    snapshot_max_chars: int = field(default=4000, metadata=knob(
        "Longest snapshot block (characters).", ge=1))
    stale_after_days: float = field(default=90.0, metadata=knob(
        "ProposeDeletions: not updated or accessed for this long is stale.", ge=0.001))
    stale_max_importance: float = field(default=0.4, metadata=knob(
        "ProposeDeletions: only memories at or below this importance are stale.", ge=0, le=1))
    consolidation_floor: float = field(default=0.85, metadata=knob(
        "Default similarity floor of FindConsolidationCandidates.", ge=0, le=1))
