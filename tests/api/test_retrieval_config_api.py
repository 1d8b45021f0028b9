"""[retrieval] in memsidecar.toml reaches the engine: Search over real gRPC follows the file,
hot knobs follow an edit without a restart, restart-only knobs keep their running value."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.retrieval.config import RetrievalConfig
from tests.api.test_search_api import NOTES
from tests.conftest import Running, start_server
from tests.waiting import wait_for

# RRF, no boosts: a hit's score is then exactly sum_s weight_s / (rrf_k + rank_s).
FILE = """\
[retrieval]
fusion = "rrf"
rrf_k = {k}
vector_weight = {vw}
lexical_weight = {lw}
graph_weight = 1.0
alpha = 0.0
beta = 0.0
max_graph_depth = {depth}
bm25_b = {b}
"""


def write(path: Path, k: float = 7, vw: float = 2.0, lw: float = 0.5, depth: int = 2,
          b: float = 0.5) -> None:
    path.write_text(FILE.format(k=k, vw=vw, lw=lw, depth=depth, b=b))


def config_file(config: ServerConfig) -> Path:
    data = Path(config.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    return data / "memsidecar.toml"


@pytest.fixture
def serve(config: ServerConfig, embedder: Embedder) -> Iterator[Callable[[], Running]]:
    """Start a server once the test has written DATA_DIR/memsidecar.toml."""
    started: list[Running] = []

    def start() -> Running:
        started.append(start_server(config, embedder))
        for content, type_, agent in NOTES:
            started[-1].store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
                content=content, type=type_, agent_id=agent)))
        return started[-1]

    yield start
    for live in started:
        live.close()


def hits(live: Running, query: str = "API tokens auth", **kw: object) -> list[s.SearchHit]:
    return list(live.store.Search(s.SearchRequest(query=query, limit=10, **kw)).hits)  # type: ignore[arg-type]


def rrf(hit: s.SearchHit, k: float, vw: float, lw: float, gw: float = 1.0) -> float:
    total = 0.0
    for rank, weight in ((hit.vector_rank, vw), (hit.lexical_rank, lw), (hit.graph_rank, gw)):
        if rank:
            total += weight / (k + rank)
    return total


def follows(found: list[s.SearchHit], k: float, vw: float, lw: float) -> bool:
    return bool(found) and all(
        h.score == pytest.approx(rrf(h, k, vw, lw), rel=1e-5) for h in found)


def test_file_fusion_knobs_shape_search_scores(config: ServerConfig,
                                               serve: Callable[[], Running]) -> None:
    write(config_file(config))
    live = serve()
    found = hits(live)
    assert any(h.vector_rank and h.lexical_rank for h in found)
    assert follows(found, k=7, vw=2.0, lw=0.5)
    defaults = RetrievalConfig()  # the built-in weights would give other scores
    assert not follows(found, defaults.rrf_k, defaults.vector_weight, defaults.lexical_weight)
    # Vector weight 2 vs lexical 0.5: the best vector hit wins over the best lexical one.
    assert found[0].vector_rank == 1


def test_file_max_graph_depth_zero_turns_graph_expansion_off(
        config: ServerConfig, serve: Callable[[], Running]) -> None:
    write(config_file(config), depth=0)
    live = serve()
    by_start = {h.memory.content.split()[0]: h.memory for h in hits(live, "x", search_limit=10)}
    seed, linked = by_start["We"], by_start["Deploys"]
    live.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(
        source_id=seed.id, target_id=linked.id, relation=m.RELATION_RESULT_OF, weight=1.0)))
    found = hits(live, "JWT", search_limit=1)
    assert linked.id not in {h.memory.id for h in found}
    assert all(h.graph_rank == 0 for h in found)

    write(config_file(config), depth=1)  # hot: the next searches expand along the edge
    wait_for(lambda: linked.id in {h.memory.id for h in hits(live, "JWT", search_limit=1)})
    expanded = {h.memory.id: h for h in hits(live, "JWT", search_limit=1)}
    assert expanded[linked.id].graph_rank == 1


def test_hot_edit_reaches_the_next_search_and_restart_keys_wait(
        config: ServerConfig, serve: Callable[[], Running],
        caplog: pytest.LogCaptureFixture) -> None:
    path = config_file(config)
    write(path)
    live = serve()
    assert follows(hits(live), k=7, vw=2.0, lw=0.5)
    with caplog.at_level(logging.WARNING, logger="sidecar.config.store"):
        write(path, k=40, vw=0.25, lw=3.0, b=0.9)  # bm25_b is restart-only
        wait_for(lambda: follows(hits(live), k=40, vw=0.25, lw=3.0))
    found = hits(live)
    assert found[0].lexical_rank == 1  # the lexical list now dominates
    running = live.server.app.settings.current.retrieval
    assert (running.rrf_k, running.bm25_b) == (40, 0.5)  # bm25_b: the running value stays
    assert live.server.app.retriever.lexical.b == 0.5  # type: ignore[attr-defined]
    assert any("bm25_b changed in the file" in r.getMessage() and "restart" in r.getMessage()
               for r in caplog.records)


def test_an_invalid_edit_is_rejected_and_the_last_good_keeps_serving(
        config: ServerConfig, serve: Callable[[], Running],
        caplog: pytest.LogCaptureFixture) -> None:
    path = config_file(config)
    write(path)
    live = serve()
    with caplog.at_level(logging.ERROR, logger="sidecar.config.store"):
        path.write_text("[retrieval]\nrrf_k = 3\nvector_weight = -1\n")
        wait_for(lambda: any("retrieval.vector_weight = -1" in r.getMessage()
                             for r in caplog.records))
    assert follows(hits(live), k=7, vw=2.0, lw=0.5)
    assert live.server.app.settings.current.retrieval.rrf_k == 7
