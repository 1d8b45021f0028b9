"""The vector source: the nearest memories to the query embedding by cosine."""

from __future__ import annotations

from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.contract import Found, SourceContext
from sidecar.retrieval.stages import VECTOR
from sidecar.retrieval.vector.contract import VectorIndex


class VectorSource:
    name = VECTOR

    def __init__(self, index: VectorIndex) -> None:
        self.index = index

    def weight(self, config: RetrievalConfig) -> float:
        return config.vector_weight

    def share(self, config: RetrievalConfig) -> float:
        return 1.0 - config.lexical_share

    def search(self, ctx: SourceContext) -> Found:
        if ctx.embedding is None:
            raise ValueError("the vector source needs the query embedding")
        limit = ctx.query.search_limit
        labels, scores = (
            self.index.search(ctx.embedding, limit, ctx.accept) if ctx.within is None else
            self.index.search_within(ctx.embedding, limit, ctx.within, ctx.accept))
        if ctx.accept is None or not len(labels):
            return Found(labels, scores)
        # Filtered again (k labels: cheap): scope is a privacy rule and must not depend on
        # every index backend honouring ``accept`` under concurrent writes.
        keep = ctx.accept(labels)
        return Found(labels[keep], scores[keep])
