"""The vector source: the nearest memories to the query embedding by cosine."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.contract import Found, SourceContext
from sidecar.retrieval.stages import VECTOR
from sidecar.retrieval.vector.contract import VectorIndex

# The labels a query's accepted memories are all among (None: not known, every row).
Among = Callable[[SourceContext], np.ndarray | None]


class VectorSource:
    name = VECTOR

    def __init__(self, index: VectorIndex, among: Among | None = None) -> None:
        """``among``: where an index that can (``search_among``) looks for a query's
        nearest rows: with scopes held on demand, the rows of the viewer's scopes instead
        of every held one."""
        self.index = index
        self.among = among

    def weight(self, config: RetrievalConfig) -> float:
        return config.vector_weight

    def share(self, config: RetrievalConfig) -> float:
        return 1.0 - config.lexical_share

    def search(self, ctx: SourceContext) -> Found:
        if ctx.embedding is None:
            raise ValueError("the vector source needs the query embedding")
        labels, scores = self._search(ctx, ctx.embedding)
        if ctx.accept is None or not len(labels):
            return Found(labels, scores)
        # Filtered again (k labels: cheap): scope is a privacy rule and must not depend on
        # every index backend honouring ``accept`` under concurrent writes.
        keep = ctx.accept(labels)
        return Found(labels[keep], scores[keep])

    def _search(self, ctx: SourceContext, embedding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = ctx.query.search_limit
        search_among = getattr(self.index, "search_among", None)
        if self.among is None or search_among is None or ctx.accept is None:
            return self.index.search(embedding, k, ctx.accept)
        among = self.among(ctx)
        if among is None:
            return self.index.search(embedding, k, ctx.accept)
        found: tuple[np.ndarray, np.ndarray] = search_among(embedding, k, among, ctx.accept)
        return found
