"""bench/retrieval_vs_txtai.py without txtai (not a dependency): the sidecar's worker answers
over its pipe with the engine's hits, the same as a search in process, in both of its orders;
the report's comparisons count what they say."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import retrieval_vs_txtai as bench
from bench.search_speed import with_graph
from bench.store_build import build_store
from sidecar.embedding import Embedder
from sidecar.embedding.models import INT8
from sidecar.retrieval.contract import SearchQuery

TEXTS = [line.strip() for path in sorted((bench.ROOT / "docs").glob("*.md"))
         for line in path.read_text(encoding="utf-8").splitlines()
         if len(line.strip()) > 60 and not line.startswith(("|", "#", "`", "-"))][:400]
QUERIES = ["How is a cold scope loaded?", "what does the durable turn promise",
           "PostgreSQL change feed", "how are blocks pruned from the history?"]


@pytest.fixture(scope="module")
def exchange(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> tuple[Path, Path]:
    """A store of the docs' sentences and the exchange folder both workers read."""
    root = tmp_path_factory.mktemp("txtai_cmp")
    ids = [f"m{i}" for i in range(len(TEXTS))]
    vectors = np.stack([embedder.embed_query(t) for t in TEXTS])
    build_store(root / "store", ids, TEXTS, vectors, model=INT8)
    with_graph(root / "store", ids)
    queries = np.stack([embedder.embed_query(q) for q in QUERIES])
    (root / "x").mkdir()
    bench.exchange(root / "x", ids, TEXTS, vectors, QUERIES, queries, "{}")
    return root / "x", root / "store"


def worker(exchange: tuple[Path, Path], *mode: str) -> bench.Side:
    """A worker over the store, or with ``mode`` over a copy (one process a data dir)."""
    folder, store = exchange
    if mode:
        copy = store.with_name(f"store_{mode[0]}")
        if not copy.exists():
            shutil.copytree(store, copy, ignore=shutil.ignore_patterns("*.lock"))
        store = copy
    side = bench.start("sidecar", [sys.executable, str(bench.HERE / "retrieval_worker.py"),
                                   str(folder), str(store), INT8, *mode],
                       bench.sidecar_env(bench.ROOT))
    side.wait_ready()
    return side


def test_the_worker_answers_with_the_engines_hits(exchange: tuple[Path, Path],
                                                  embedder: Embedder) -> None:
    search, finish = worker(exchange), worker(exchange, "finish")
    try:
        assert search.ready["tree"] == str(bench.ROOT)
        bench.run([search, finish], len(QUERIES), rounds=2, warmup=1, limit=5)
        assert len(search.us) == len(finish.us) == 2 * len(QUERIES)
        assert {"vector", "lexical", "fusion"} <= set(search.stages)
        same, gap = bench.same_hits(search, finish)
        assert same == len(QUERIES) and gap < 1e-6  # an Inject's order finds what Search does
    finally:
        search.close()
        finish.close()
    assert search.process.returncode == 0
    from bench.retrieval_worker import open_app  # the engine in this process, as reference

    app = open_app(exchange[1], INT8)
    try:
        for i, text in enumerate(QUERIES):
            hits = app.retriever.search(SearchQuery(text, agent_id="bench", limit=5,
                                                    embedding=embedder.embed_query(text))).hits
            assert [h.memory.id for h in hits] == search.answers[i]["ids"]
    finally:
        app.close()


def side_with(answers: list[list[str]]) -> bench.Side:
    side = bench.Side("x", subprocess.Popen(["true"]))
    side.process.wait()
    side.answers = {i: {"ids": list(ids), "scores": [1.0] * len(ids)}
                    for i, ids in enumerate(answers)}
    return side


def test_the_comparisons_count_what_they_say() -> None:
    a = side_with([["m1", "m2"], ["m3", "m4"], ["m5", "m6"]])
    b = side_with([["m2", "m1"], ["m3", "m9"], ["m5", "m6"]])
    assert bench.overlap(a, b, 2) == pytest.approx((2 + 1 + 2) / 6)
    assert bench.same_hits(a, b) == (1, 0.0)  # the same memories in another order differ
    sessions = {"m1": "s1", "m3": "s2", "m9": "s3"}
    wanted = [frozenset({"s1"}), frozenset({"s3"}), frozenset({"s4"})]  # s4: not in the corpus
    assert bench.evidence_rate(a, sessions, wanted, 2) == "1/2"
    assert bench.evidence_rate(b, sessions, wanted, 2) == "2/2"
    assert bench.evidence_rate(b, sessions, wanted, 1) == "0/2"
