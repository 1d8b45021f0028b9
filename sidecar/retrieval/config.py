"""Every retrieval knob in one frozen dataclass, defaults in one place.

The config loader maps these onto the TOML ``[retrieval]`` section key by key (same names).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from sidecar.records import Relation

# Graph expansion: a neighbour scores importance x edge weight x this multiplier.
DEFAULT_RELATION_MULTIPLIERS: tuple[tuple[Relation, float], ...] = (
    (Relation.UPDATES, 1.5),
    (Relation.CAUSED_BY, 1.3),
    (Relation.RESULT_OF, 1.3),
    (Relation.RELATED_TO, 1.0),
    (Relation.PART_OF, 0.8),
    (Relation.CONTRADICTS, 0.5),
)


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    # Candidates each source (vector, lexical, graph) contributes before fusion.
    search_limit: int = 20
    # Reciprocal rank fusion: sum of weight / (rrf_k + rank) over the sources. Chosen on the
    # tune half of LongMemEval (README "Search / retrieval"): plain k=60 equal-weight RRF tied
    # BM25 alone; a sharper k and more weight on the lexical list beat both sources.
    rrf_k: float = 10.0
    vector_weight: float = 1.0
    lexical_weight: float = 1.5
    graph_weight: float = 1.0
    # Tie-break boost: + alpha * importance + beta * 0.5 ** (age / half-life).
    alpha: float = 0.005
    beta: float = 0.005
    recency_half_life_days: float = 30.0
    # Graph expansion seeds: candidates at or above this importance, at most this many.
    graph_seed_threshold: float = 0.8
    graph_seed_limit: int = 20
    max_graph_depth: int = 2
    relation_multipliers: tuple[tuple[Relation, float], ...] = DEFAULT_RELATION_MULTIPLIERS
    # BM25 Okapi (rank-bm25 semantics).
    bm25_k1: float = 1.5
    bm25_b: float = 0.5  # conversational turns: less length normalisation (tune half)
    bm25_epsilon: float = 0.25
    # Run the vector and lexical searches on two threads (both release the GIL) once this many
    # memories are live; 0 = always. Below it the thread hand-off costs more than it saves
    # (bench/search_speed.py: slower at 10k, faster at 100k on 2 cores).
    parallel_min_memories: int = 50_000

    def __post_init__(self) -> None:
        positive = ("search_limit", "rrf_k", "recency_half_life_days", "bm25_k1")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"retrieval.{name} must be > 0 (got {getattr(self, name)})")
        non_negative = ("vector_weight", "lexical_weight", "graph_weight", "alpha", "beta",
                        "graph_seed_limit", "max_graph_depth", "bm25_epsilon",
                        "parallel_min_memories")
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ValueError(f"retrieval.{name} must be >= 0 (got {getattr(self, name)})")
        for name in ("graph_seed_threshold", "bm25_b"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"retrieval.{name} must be in [0, 1] (got {getattr(self, name)})")

    @property
    def multipliers(self) -> dict[Relation, float]:
        return dict(self.relation_multipliers)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))
