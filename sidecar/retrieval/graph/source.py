"""The graph source: memories linked to the best candidates of the earlier sources.

Seeds are the candidates found so far with importance >= ``graph_seed_threshold``, best rank
(over every earlier list) first, at most ``graph_seed_limit``; they are expanded along edges
up to ``max_graph_depth`` (``EdgeGraph.expand``).
"""

from __future__ import annotations

from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.contract import Found, SourceContext, nothing
from sidecar.retrieval.graph.expansion import EdgeGraph
from sidecar.retrieval.stages import GRAPH


class GraphSource:
    name = GRAPH

    def __init__(self, graph: EdgeGraph) -> None:
        self.graph = graph

    def weight(self, config: RetrievalConfig) -> float:
        return config.graph_weight

    def share(self, config: RetrievalConfig) -> float:
        return config.graph_share

    def search(self, ctx: SourceContext) -> Found:
        c = ctx.config
        if c.graph_seed_limit == 0 or c.max_graph_depth == 0 or not len(self.graph):
            return nothing()
        best: dict[int, int] = {}
        for labels in ctx.found.values():
            for rank, label in enumerate(labels.tolist()):
                if label not in best or rank < best[label]:
                    best[label] = rank
        seeds = [s for s in sorted(best, key=lambda s: (best[s], s))
                 if ctx.live.importance[s] >= c.graph_seed_threshold][: c.graph_seed_limit]
        if not seeds:
            return nothing()
        accept = ctx.live.filter(ctx.query.agent_id, ctx.query.types)
        return Found(*self.graph.expand(seeds, ctx.live, accept, c.multipliers,
                                        c.max_graph_depth, ctx.query.search_limit))
