"""What a retrieval source is: a named, weighted list of candidate labels with the source's own
scores, best first.

The engine runs its sources for a query and fuses their lists (``fusion.rrf`` by rank,
``fusion.scores`` by normalised score, ``[retrieval] fusion``). A source reads what it needs
from the ``SourceContext``; sources that run after the first stage (vector and lexical) also
see the labels the earlier ones found (``found``), e.g. as seeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np

from sidecar.retrieval.config import SCORES, RetrievalConfig
from sidecar.retrieval.contract import Accept, SearchQuery
from sidecar.retrieval.mirror import LiveMemories


class Found(NamedTuple):
    """A source's answer: labels (int64) best first, and its score of each (float64,
    descending; any scale: the score fusion normalises it per query); ``every``: when the
    source scored every accepted label anyway, all of them (labels ascending, scores)."""

    labels: np.ndarray
    scores: np.ndarray
    every: tuple[np.ndarray, np.ndarray] | None = None


def nothing() -> Found:
    return Found(np.zeros(0, np.int64), np.zeros(0, np.float64))


@dataclass(frozen=True, slots=True)
class SourceContext:
    """Everything a source may use to rank candidates for one query."""

    config: RetrievalConfig  # the config in force for this query
    query: SearchQuery
    live: LiveMemories
    accept: Accept | None  # scope filter; None = every live memory may be returned
    embedding: np.ndarray | None = None  # the query embedding, once computed
    found: Mapping[str, np.ndarray] = field(default_factory=dict)  # earlier sources' labels
    # Every label ``accept`` may take, when the viewer's scopes are a small part of the
    # index (the vector source then scores only these); None = search the whole index.
    within: np.ndarray | None = None


class Source(Protocol):
    name: str  # also the name of its timing stage and of its rank in a hit

    def weight(self, config: RetrievalConfig) -> float:
        """Its weight in reciprocal rank fusion (a ``[retrieval]`` knob)."""
        ...

    def share(self, config: RetrievalConfig) -> float:
        """Its weight in score fusion (a ``[retrieval]`` knob)."""
        ...

    def search(self, ctx: SourceContext) -> Found:
        """Candidates, best first, at most ``ctx.query.search_limit``."""
        ...


def fusion_weight(source: Source, config: RetrievalConfig) -> float:
    """The source's weight in the fusion ``config`` selects."""
    return source.share(config) if config.fusion == SCORES else source.weight(config)
