"""Every retrieval knob in one frozen dataclass, defaults in one place.

This is the TOML ``[retrieval]`` section itself (``sidecar/config/schema.py`` registers it):
each field's meaning, range and hot/restart flag is its ``knob`` metadata, from which the loader
validates and the configuration reference is generated. Nested dataclasses are sub-tables:
``[retrieval.relation_multipliers]`` (one key per relation label) and ``[retrieval.vector]``
(``VectorConfig``, the vector index).

The engine reads the current config on every search, so every knob is hot except those marked
``restart=True`` (they build an index at start): a reload keeps their running value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from sidecar.knobs import knob, unit
from sidecar.records import Relation
from sidecar.retrieval.vector.config import VectorConfig

WEIGHT_MAX = 100.0
RRF = "rrf"  # reciprocal rank fusion (fusion.rrf)
SCORES = "scores"  # normalised score fusion (fusion.scores)
FUSIONS = (RRF, SCORES)
NORMALISATIONS = ("max", "minmax", "zscore")
AUTO, STORE, SCOPES = "auto", "store", "scopes"
RESIDENCIES = (AUTO, STORE, SCOPES)


@dataclass(frozen=True, slots=True)
class RelationMultipliers:
    """Graph expansion: a neighbour scores importance x edge weight x its relation's multiplier.

    TOML: ``[retrieval.relation_multipliers]`` with relation labels as keys, e.g.
    ``updates = 2.0``; relations not given keep their default.
    """

    updates: float = field(default=1.5, metadata=knob(
        "Multiplier of an UPDATES edge in graph expansion.", ge=0.0, le=WEIGHT_MAX))
    caused_by: float = field(default=1.3, metadata=knob(
        "Multiplier of a CAUSED_BY edge.", ge=0.0, le=WEIGHT_MAX))
    result_of: float = field(default=1.3, metadata=knob(
        "Multiplier of a RESULT_OF edge.", ge=0.0, le=WEIGHT_MAX))
    related_to: float = field(default=1.0, metadata=knob(
        "Multiplier of a RELATED_TO edge.", ge=0.0, le=WEIGHT_MAX))
    part_of: float = field(default=0.8, metadata=knob(
        "Multiplier of a PART_OF edge.", ge=0.0, le=WEIGHT_MAX))
    contradicts: float = field(default=0.5, metadata=knob(
        "Multiplier of a CONTRADICTS edge.", ge=0.0, le=WEIGHT_MAX))

    def as_dict(self) -> dict[Relation, float]:
        return {Relation[f.name.upper()]: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    search_limit: int = field(default=20, metadata=knob(
        "Candidates each source (vector, lexical, graph) contributes before fusion, when a "
        "Search leaves search_limit at 0 (then max(this, limit)).", ge=1, le=1000))
    # Reciprocal rank fusion: sum of weight / (rrf_k + rank) over the sources; k and the
    # weights were chosen on the tune half of LongMemEval (docs/decisions/0005-rrf-weights.md).
    rrf_k: float = field(default=10.0, metadata=knob(
        "Reciprocal-rank-fusion constant k in weight / (k + rank).", ge=0.1, le=10_000))
    vector_weight: float = field(default=1.0, metadata=knob(
        "RRF weight of the vector (cosine) list.", ge=0.0, le=WEIGHT_MAX))
    lexical_weight: float = field(default=1.5, metadata=knob(
        "RRF weight of the lexical (BM25) list.", ge=0.0, le=WEIGHT_MAX))
    graph_weight: float = field(default=1.0, metadata=knob(
        "RRF weight of the graph-expansion list.", ge=0.0, le=WEIGHT_MAX))
    fusion: str = field(default=SCORES, metadata=knob(
        "How the sources' lists become one ranking: \"scores\" (a weighted sum of each "
        "source's score normalised per query: lexical_share, graph_share) or \"rrf\" "
        "(reciprocal rank fusion: rrf_k and the *_weight knobs).", choices=FUSIONS))
    # Score fusion: fused = (1 - lexical_share) x cosine' + lexical_share x BM25'
    # + graph_share x graph' (x' = x normalised per query over the candidates); chosen on the
    # tune half of LongMemEval (docs/decisions/0010-score-fusion.md).
    score_normalisation: str = field(default="max", metadata=knob(
        "Score fusion: per-query normalisation of each source's scores over the candidates "
        "(\"max\": a fraction of the source's best; \"minmax\": 0..1 from worst to best; "
        "\"zscore\": standard scores).", choices=NORMALISATIONS))
    lexical_share: float = field(default=0.7, metadata=unit(
        "Score fusion: weight of the normalised BM25 score; the query cosine (computed for "
        "every candidate) gets 1 - this."))
    graph_share: float = field(default=0.1, metadata=unit(
        "Score fusion: weight of the normalised graph-expansion score, added on top."))
    # Off by default: it helps only where a channel is one session
    # (docs/decisions/0012-channel-diversity.md).
    channel_diversity: float = field(default=0.0, metadata=unit(
        "Spread the hits over channels: a candidate loses this fraction of the best hit's "
        "fused score for every hit ranked above it from its own channel; memories without a "
        "channel are never held back; 0 = off. Leave it off when a channel is a conversation "
        "(as Inject's are): it pushes a conversation's own memories apart and lowers recall. "
        "0.05 suits stores whose channels are single sessions."))
    # Tie-break boost: + alpha * importance + beta * 0.5 ** (age / half-life).
    alpha: float = field(default=0.005, metadata=knob(
        "Importance boost: + alpha x importance on the fused score.", ge=0.0, le=1.0))
    beta: float = field(default=0.005, metadata=knob(
        "Recency boost: + beta x 0.5 ** (age / half-life) on the fused score.", ge=0.0, le=1.0))
    recency_half_life_days: float = field(default=30.0, metadata=knob(
        "Age (days) at which the recency boost has halved.", ge=0.001, le=36_500))
    graph_seed_threshold: float = field(default=0.8, metadata=knob(
        "Least importance of a vector/lexical candidate used as a graph seed.", ge=0.0, le=1.0))
    graph_seed_limit: int = field(default=20, metadata=knob(
        "Most graph seeds per search (0 = no graph expansion).", ge=0, le=10_000))
    max_graph_depth: int = field(default=2, metadata=knob(
        "Edges followed from a seed (0 = no graph expansion).", ge=0, le=10))
    relation_multipliers: RelationMultipliers = field(
        default_factory=RelationMultipliers, metadata=knob(
            "Graph expansion: a neighbour scores importance x edge weight x its relation's "
            "multiplier; one key per relation label, relations not given keep their default."))
    # BM25 Okapi (rank-bm25 semantics); the index is built with them at start. Stemming won
    # on the held-out half of LongMemEval (docs/decisions/0009-bm25-stemming.md).
    bm25_k1: float = field(default=1.5, metadata=knob(
        "BM25 term-frequency saturation k1.", ge=0.01, le=10.0, restart=True))
    bm25_b: float = field(default=0.5, metadata=knob(
        "BM25 length normalisation b (0.5: conversational turns).", ge=0.0, le=1.0,
        restart=True))
    bm25_epsilon: float = field(default=0.25, metadata=knob(
        "BM25 floor of a negative idf, as a fraction of the mean idf.", ge=0.0, le=10.0,
        restart=True))
    bm25_stemming: bool = field(default=True, metadata=knob(
        "Snowball English stemming of BM25 terms, documents and queries alike (\"flights\" "
        "matches \"flight\"); the saved postings are rebuilt at start when it changes.",
        restart=True))
    # Off by default: it speeds up long turns at 100k (BM25 p50 7.3 -> 1.2 ms at 24 terms) but
    # changes what they retrieve (docs/decisions/0010-score-fusion.md).
    bm25_query_max_terms: int = field(default=0, metadata=knob(
        "BM25 scores only this many distinct query terms, the rarest (highest idf); 0 = all. "
        "Speeds up long queries (conversation turns).", ge=0, le=10_000))
    # Below it the thread hand-off costs more than it saves (bench/search_speed.py,
    # docs/decisions/0002-bm25-beside-the-embedding.md).
    parallel_min_memories: int = field(default=50_000, metadata=knob(
        "Run the vector and lexical searches on two threads once this many memories are "
        "live (0 = always), for a query whose embedding is given or was computed on both "
        "cores (onnx_long_text_tokens); any other query runs BM25 during its embedding.",
        ge=0, le=1_000_000_000))
    # 256 = the model's own cap (memories are embedded up to it). A shorter cut speeds up the
    # longest turns but changes what they retrieve (docs/decisions/0004-long-text-session.md).
    query_max_tokens: int = field(default=256, metadata=knob(
        "Model tokens (with [CLS] and [SEP]) of a query text that are embedded, for Search "
        "and Inject; the rest is cut. BM25 always sees the whole text.", ge=8, le=256))
    # What one sidecar holds in its indexes (docs/decisions/0022-resident-scopes.md): a 2 GB
    # container leaves about 1 GB to memories beside the model and the runtime.
    resident_mb: float = field(default=768.0, metadata=knob(
        "Memory budget (MB) of the scopes held in the indexes (vectors, BM25, mirror): a "
        "scope (the shared memories, an agent's own, an agent's user's) is loaded on its "
        "first use and the least recently used are evicted beyond this; the shared scope "
        "and resident_agents' scopes stay. Size it in docs/scaling.md.", ge=0.1, le=1_000_000))
    residency: str = field(default=AUTO, metadata=knob(
        "What the indexes hold: \"store\" every memory (loaded at start, BM25 statistics of "
        "the whole store); \"scopes\" the scopes in use, loaded on first use and evicted "
        "beyond resident_mb (BM25 statistics of the scopes a search reads); \"auto\": "
        "\"store\" when the store's memories fit resident_mb at start, else \"scopes\".",
        choices=RESIDENCIES, restart=True))
    resident_agents: tuple[str, ...] = field(default=(), metadata=knob(
        "Agents whose own scope (their general knowledge, not their users') is loaded at "
        "start and never evicted, like the shared scope.", restart=True))
    vector: VectorConfig = field(default_factory=VectorConfig, metadata=knob(
        "The vector index: exact numpy below exact_threshold live memories, hnswlib above."))

    @property
    def multipliers(self) -> dict[Relation, float]:
        return self.relation_multipliers.as_dict()
