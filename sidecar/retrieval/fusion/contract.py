"""What a retrieval source is: a named, weighted list of candidate labels, best first.

The engine runs its sources for a query and fuses their lists (``fusion.rrf``). A source reads
what it needs from the ``SourceContext``; sources that run after the first stage (vector and
lexical) also see the labels the earlier ones found (``found``), e.g. as seeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Accept, SearchQuery
from sidecar.retrieval.mirror import LiveMemories


def no_labels() -> np.ndarray:
    return np.zeros(0, np.int64)


@dataclass(frozen=True, slots=True)
class SourceContext:
    """Everything a source may use to rank candidates for one query."""

    config: RetrievalConfig  # the config in force for this query
    query: SearchQuery
    live: LiveMemories
    accept: Accept | None  # scope filter; None = every live memory may be returned
    embedding: np.ndarray | None = None  # the query embedding, once computed
    found: Mapping[str, np.ndarray] = field(default_factory=dict)  # earlier sources' labels


class Source(Protocol):
    name: str  # also the name of its timing stage and of its rank in a hit

    def weight(self, config: RetrievalConfig) -> float:
        """Its weight in the fusion (a ``[retrieval]`` knob)."""
        ...

    def search(self, ctx: SourceContext) -> np.ndarray:
        """Candidate labels (int64), best first, at most ``ctx.query.search_limit``."""
        ...
