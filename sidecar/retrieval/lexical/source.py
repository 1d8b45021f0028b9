"""The lexical source: the best BM25 matches of the query text."""

from __future__ import annotations

from sidecar.retrieval.config import RetrievalConfig
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
        query = ctx.query
        if not query.context_texts:
            return Found(*self.index.search(query.text, query.search_limit, ctx.accept,
                                            ctx.config.bm25_query_max_terms))
        own = self.index.scores(query.text, ctx.config.bm25_query_max_terms)
        labels, scores = self.index.with_context(own, query.context_texts)
        if len(labels) and ctx.accept is not None:
            keep = ctx.accept(labels)
            labels, scores = labels[keep], scores[keep]
        return Found(*top_k(labels, scores, query.search_limit))
