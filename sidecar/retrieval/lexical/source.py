"""The lexical source: the best BM25 matches of the query text."""

from __future__ import annotations

from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.contract import Found, SourceContext
from sidecar.retrieval.lexical.bm25 import BM25Index
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
                                        ctx.config.bm25_query_max_terms,
                                        ctx.query.context_texts))
