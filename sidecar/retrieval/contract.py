"""What a retrieval engine takes and returns. Used by Search and by Inject."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

import numpy as np

from sidecar.records import Memory, MemoryType

# Vectorised filter: takes an int64 array of labels, returns a bool mask of accepted ones.
Accept = Callable[[np.ndarray], np.ndarray]


class Mode(Enum):
    HYBRID = "hybrid"
    VECTOR = "vector"
    LEXICAL = "lexical"


@dataclass(frozen=True, slots=True)
class SearchQuery:
    text: str
    agent_id: str = ""  # sees shared memories + its own
    limit: int = 10
    types: tuple[MemoryType, ...] = ()
    mode: Mode = Mode.HYBRID
    search_limit: int = 20  # candidates per source before fusion
    embedding: np.ndarray | None = None  # precomputed query embedding, if the caller has it


@dataclass(frozen=True, slots=True)
class Hit:
    memory: Memory
    score: float  # fused score
    cosine: float  # query-memory cosine (thresholdable)
    vector_rank: int = 0  # 1-based; 0 = absent from that source
    lexical_rank: int = 0
    graph_rank: int = 0


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    query_embedding: np.ndarray
    timings_us: dict[str, int] = field(default_factory=dict)  # embed, vector, lexical, ...


class Retriever(Protocol):
    def search(self, query: SearchQuery) -> SearchResult: ...

    def embed_query(self, text: str) -> np.ndarray:
        """The embedding ``search`` would compute for ``text``."""
        ...

    def embedding_of(self, memory_id: str) -> np.ndarray | None:
        """The stored embedding of a live memory (for semantic dedup)."""
        ...
