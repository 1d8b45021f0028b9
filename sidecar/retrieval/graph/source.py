"""The graph source: memories linked to the best candidates of the earlier sources.

Seeds are the candidates found so far with importance >= ``graph_seed_threshold``, best rank
(over every earlier list), then seq, first, at most ``graph_seed_limit``; they are expanded
along edges up to ``max_graph_depth`` (both in ``EdgeGraph.expand``).
"""

from __future__ import annotations

import numpy as np

from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.contract import Found, SourceContext, nothing
from sidecar.retrieval.graph.expansion import EdgeGraph, relation_factors
from sidecar.retrieval.stages import GRAPH


class GraphSource:
    name = GRAPH

    def __init__(self, graph: EdgeGraph) -> None:
        self.graph = graph
        self._factors: tuple[RetrievalConfig | None, np.ndarray] = (None, np.ones(0))

    def weight(self, config: RetrievalConfig) -> float:
        return config.graph_weight

    def share(self, config: RetrievalConfig) -> float:
        return config.graph_share

    def search(self, ctx: SourceContext) -> Found:
        c = ctx.config
        if c.graph_seed_limit == 0 or c.max_graph_depth == 0 or not len(self.graph):
            return nothing()
        factors = self._factors
        if factors[0] is not c:  # a new config: its multipliers as an array, once
            self._factors = factors = (c, relation_factors(c.multipliers))
        visibility = ctx.live.visibility(ctx.query.viewer, ctx.query.types)
        return Found(*self.graph.expand(tuple(ctx.found.values()), c.graph_seed_threshold,
                                        c.graph_seed_limit, visibility, factors[1],
                                        c.max_graph_depth, ctx.query.search_limit))
