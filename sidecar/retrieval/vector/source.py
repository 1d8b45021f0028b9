"""The vector source: the nearest memories to the query embedding by cosine."""

from __future__ import annotations

import numpy as np

from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.contract import SourceContext
from sidecar.retrieval.stages import VECTOR
from sidecar.retrieval.vector.contract import VectorIndex


class VectorSource:
    name = VECTOR

    def __init__(self, index: VectorIndex) -> None:
        self.index = index

    def weight(self, config: RetrievalConfig) -> float:
        return config.vector_weight

    def search(self, ctx: SourceContext) -> np.ndarray:
        if ctx.embedding is None:
            raise ValueError("the vector source needs the query embedding")
        labels, _ = self.index.search(ctx.embedding, ctx.query.search_limit, ctx.accept)
        if ctx.accept is None or not len(labels):
            return labels
        # Filtered again (k labels: cheap): scope is a privacy rule and must not depend on
        # every index backend honouring ``accept`` under concurrent writes.
        return labels[ctx.accept(labels)]
