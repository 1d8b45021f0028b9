"""The lexical source: the best BM25 matches of the query text. A query with a context
(``SearchQuery.context_texts``) scores every document anyway: those scores come back too
(``Found.every``, labels ascending), for the conversation focus to read."""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np

from sidecar.records import Viewer
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.contract import Found, SourceContext
from sidecar.retrieval.lexical.bm25 import BM25Index, accepted, top_k
from sidecar.retrieval.stages import LEXICAL


class LexicalSource:
    name = LEXICAL

    def __init__(self, index: BM25Index,
                 groups: Callable[[Viewer], Collection[int] | None] = lambda _: None) -> None:
        """``groups``: the BM25 groups whose statistics a viewer's query scores with."""
        self.index = index
        self.groups = groups

    def weight(self, config: RetrievalConfig) -> float:
        return config.lexical_weight

    def share(self, config: RetrievalConfig) -> float:
        return config.lexical_share

    def search(self, ctx: SourceContext) -> Found:
        query = ctx.query
        groups = self.groups(query.viewer)
        if not query.context_texts:
            columns = (None if ctx.accept is None
                       else ctx.live.visibility(query.viewer, query.types))
            return Found(*self.index.search(query.text, query.search_limit, ctx.accept,
                                            ctx.config.bm25_query_max_terms, groups, columns))
        own = self.index.scores(query.text, ctx.config.bm25_query_max_terms, groups)
        labels, scores = accepted(self.index.with_context(own, query.context_texts, groups),
                                  ctx.accept)
        if len(labels) > 1 and not bool(np.all(labels[1:] > labels[:-1])):
            order = np.argsort(labels, kind="stable")  # own scores alone: in posting order
            labels, scores = labels[order], scores[order]
        return Found(*top_k(labels, scores, query.search_limit), every=(labels, scores))
