"""The lexical source: the best BM25 matches of the query text."""

from __future__ import annotations

import numpy as np

from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Weighted
from sidecar.retrieval.fusion.contract import Found, SourceContext
from sidecar.retrieval.lexical.bm25 import BM25Index, top_k
from sidecar.retrieval.stages import LEXICAL


class LexicalSource:
    name = LEXICAL

    def __init__(self, index: BM25Index) -> None:
        self.index = index

    def weight(self, config: RetrievalConfig) -> float:
        return config.lexical_weight

    def share(self, config: RetrievalConfig) -> float:
        return config.lexical_share

    def search(self, ctx: SourceContext) -> Found:
        return Found(*self.index.search(ctx.query.text, ctx.query.search_limit, ctx.accept,
                                        ctx.config.bm25_query_max_terms))

    def own_scores(self, ctx: SourceContext) -> tuple[np.ndarray, np.ndarray]:
        """Every document the query text's own terms score: the first half of a steered
        search (``steered``)."""
        return self.index.scores(ctx.query.text, ctx.config.bm25_query_max_terms)

    def steered(self, ctx: SourceContext, own: tuple[np.ndarray, np.ndarray],
                context: Weighted) -> Found:
        """The top ``search_limit`` accepted documents of ``own`` scores with the ``context``
        texts' added (``BM25Index.with_context``)."""
        labels, scores = self.index.with_context(own, context)
        if len(labels) and ctx.accept is not None:
            keep = ctx.accept(labels)
            labels, scores = labels[keep], scores[keep]
        return Found(*top_k(labels, scores, ctx.query.search_limit))
