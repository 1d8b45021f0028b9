"""Saving the hnsw index beside a real SQLite file; loading it only when it matches."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sidecar.records import Memory, MemoryType
from sidecar.retrieval.vector.adaptive import AdaptiveVectorIndex, open_vector_index
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.retrieval.vector.persist import INDEX_FILE, meta_path
from sidecar.store.db import Database
from sidecar.store.memories import MemoryRepo
from sidecar.store.repos import Repositories
from tests.retrieval.synthetic import clustered, normalise

DIM = 32
N = 600
CONFIG = VectorConfig(exact_threshold=100, hnsw_ef_search=128)
LOGGER = "sidecar.retrieval.vector.adaptive"


def memory(i: int) -> Memory:
    return Memory(id=f"m{i}", content=f"memory {i}", type=MemoryType.FACT, importance=0.6,
                  created_at=i, updated_at=i, last_accessed_at=0, access_count=0, source="",
                  channel_id="", agent_id="", forgotten=False, version=1)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[MemoryRepo]:
    db = Database(tmp_path / "memsidecar.sqlite3")
    store = Repositories.open(db).memories
    with db.transaction():
        for i, vector in enumerate(clustered(N, DIM, seed=1)):
            store.insert(memory(i), vector)
    yield store
    db.close()


def get(repo: MemoryRepo, memory_id: str) -> Memory:
    found = repo.get(memory_id)
    assert found is not None
    return found


def open_index(tmp_path: Path, repo: MemoryRepo, config: VectorConfig = CONFIG,
               wait: bool = True) -> AdaptiveVectorIndex:
    return open_vector_index(tmp_path, repo, config, dim=DIM, wait=wait)


def messages(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.getMessage() == message]


def results(index: AdaptiveVectorIndex) -> list[list[int]]:
    return [index.search(q, 10)[0].tolist() for q in clustered(20, DIM, seed=2)]


def test_first_start_builds_and_saves_then_restart_loads(
    tmp_path: Path, repo: MemoryRepo, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    index = open_index(tmp_path, repo)
    [rebuild] = messages(caplog, "vector index rebuild")
    assert rebuild.levelno == logging.WARNING and rebuild.__dict__["reason"].startswith("missing")
    assert (tmp_path / INDEX_FILE).exists() and meta_path(tmp_path / INDEX_FILE).exists()
    before = results(index)
    index.close()
    caplog.clear()
    index = open_index(tmp_path, repo, wait=False)
    assert index.hnsw is not None and not index.building  # loaded, not rebuilt
    assert messages(caplog, "vector index loaded") and not messages(caplog, "vector index rebuild")
    assert results(index) == before
    meta = json.loads(meta_path(tmp_path / INDEX_FILE).read_text())
    assert meta["count"] == N and meta["max_seq"] == N
    mtime = (tmp_path / INDEX_FILE).stat().st_mtime_ns
    index.close()  # nothing changed: not rewritten
    assert (tmp_path / INDEX_FILE).stat().st_mtime_ns == mtime


def test_changes_indexed_before_close_are_saved(tmp_path: Path, repo: MemoryRepo,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    index = open_index(tmp_path, repo)
    # What the engine does on memories_stored / memories_forgotten, after the commit:
    new_vector = normalise(np.ones(DIM))
    stored = repo.insert(memory(N), new_vector)
    index.add(np.array([stored.seq]), new_vector[None])
    gone = repo.update(replace(get(repo, "m3"), forgotten=True), None)
    index.remove(np.array([gone.seq]))
    index.close()
    caplog.clear()
    index = open_index(tmp_path, repo, wait=False)
    assert messages(caplog, "vector index loaded") and index.hnsw is not None
    assert index.hnsw.search(new_vector, 1)[0].tolist() == [stored.seq]
    assert gone.seq not in index.hnsw.search(new_vector, N)[0].tolist()
    index.close()


def forget_one(repo: MemoryRepo) -> None:
    repo.update(replace(get(repo, "m7"), forgotten=True), None)


def add_one(repo: MemoryRepo) -> None:
    repo.insert(memory(N), normalise(np.ones(DIM)))


def move_one(repo: MemoryRepo) -> None:
    """Same count, same max seq: only the content checksum can tell."""
    repo.update(get(repo, "m5"), normalise(np.ones(DIM)))


def forget_and_add(repo: MemoryRepo) -> None:
    """Same count again, new max seq."""
    forget_one(repo)
    add_one(repo)


@pytest.mark.parametrize("change", [forget_one, add_one, move_one, forget_and_add])
def test_stale_index_is_rebuilt_and_says_why(
    tmp_path: Path, repo: MemoryRepo, caplog: pytest.LogCaptureFixture, change: object
) -> None:
    open_index(tmp_path, repo).close()
    change(repo)  # type: ignore[operator]  # written while the index was not listening
    caplog.set_level(logging.INFO, logger=LOGGER)
    caplog.clear()
    index = open_index(tmp_path, repo)
    [rebuild] = messages(caplog, "vector index rebuild")
    assert rebuild.levelno == logging.WARNING and rebuild.__dict__["reason"].startswith("stale")
    live = {m.seq: v for ms, vs in repo.iter_live_embeddings() for m, v in zip(ms, vs, strict=True)}
    assert index.hnsw is not None and len(index.hnsw) == len(live)
    target = normalise(np.ones(DIM))
    best = index.hnsw.search(target, 1)[0][0]
    assert np.allclose(live[int(best)] @ target, max(v @ target for v in live.values()))
    index.close()


def flip_bytes(path: Path) -> None:
    data = bytearray((path / INDEX_FILE).read_bytes())
    for i in range(200, len(data), len(data) // 7):
        data[i] ^= 0xFF
    (path / INDEX_FILE).write_bytes(bytes(data))


def truncate(path: Path) -> None:
    with (path / INDEX_FILE).open("r+b") as handle:
        handle.truncate(1000)


def garbage_meta(path: Path) -> None:
    meta_path(path / INDEX_FILE).write_text("{not json")


def no_meta(path: Path) -> None:
    os.remove(meta_path(path / INDEX_FILE))


def no_index(path: Path) -> None:
    os.remove(path / INDEX_FILE)


@pytest.mark.parametrize(("damage", "reason"), [
    (flip_bytes, "corrupt"), (truncate, "corrupt"), (garbage_meta, "corrupt"),
    (no_meta, "missing"), (no_index, "missing"),
])
def test_damaged_index_files_are_rebuilt(
    tmp_path: Path, repo: MemoryRepo, caplog: pytest.LogCaptureFixture, damage: object,
    reason: str,
) -> None:
    index = open_index(tmp_path, repo)
    before = results(index)
    index.close()
    damage(tmp_path)  # type: ignore[operator]
    caplog.set_level(logging.INFO, logger=LOGGER)
    caplog.clear()
    index = open_index(tmp_path, repo)
    [rebuild] = messages(caplog, "vector index rebuild")
    assert rebuild.__dict__["reason"].startswith(reason)
    assert index.hnsw is not None
    overlap = [len(set(a) & set(b)) for a, b in zip(results(index), before, strict=True)]
    assert np.mean(overlap) >= 9.5  # same data (builds may differ with several threads)
    index.close()
    caplog.clear()
    open_index(tmp_path, repo, wait=False).close()  # the rebuild was saved
    assert messages(caplog, "vector index loaded")


def test_changed_build_parameters_rebuild(tmp_path: Path, repo: MemoryRepo,
                                          caplog: pytest.LogCaptureFixture) -> None:
    open_index(tmp_path, repo).close()
    caplog.set_level(logging.INFO, logger=LOGGER)
    caplog.clear()
    open_index(tmp_path, repo, replace(CONFIG, hnsw_m=8)).close()
    [rebuild] = messages(caplog, "vector index rebuild")
    assert "m=16" in rebuild.__dict__["reason"] and "m=8" in rebuild.__dict__["reason"]


def test_periodic_save_after_many_changes(tmp_path: Path, repo: MemoryRepo) -> None:
    config = replace(CONFIG, save_every_changes=50, save_min_interval_s=0.0)
    index = open_index(tmp_path, repo, config)
    vectors = clustered(60, DIM, seed=9)
    for i, vector in enumerate(vectors):
        stored = repo.insert(memory(N + i), vector)
        index.add(np.array([stored.seq]), vector[None])
    saver = index._saver
    assert saver is not None
    saver.join()
    meta = json.loads(meta_path(tmp_path / INDEX_FILE).read_text())
    assert meta["count"] == N + 50  # saved in the background when the 50th change came in
    index.close()
    assert json.loads(meta_path(tmp_path / INDEX_FILE).read_text())["count"] == N + 60


def test_small_store_stays_exact_and_writes_nothing(tmp_path: Path, repo: MemoryRepo) -> None:
    index = open_index(tmp_path, repo, replace(CONFIG, exact_threshold=10_000))
    assert index.hnsw is None and index.stats()["engine"] == "exact"
    index.close()
    assert not (tmp_path / INDEX_FILE).exists()


def test_iter_live_vectors_matches_iter_live_embeddings(repo: MemoryRepo) -> None:
    repo.update(replace(get(repo, "m2"), forgotten=True), None)
    batches = list(repo.iter_live_vectors(batch=64))
    assert len(batches) == -(-(N - 1) // 64)
    seqs = np.concatenate([s for s, _ in batches])
    vectors = np.vstack([v for _, v in batches])
    want = [(m.seq, v) for ms, vs in repo.iter_live_embeddings() for m, v in zip(ms, vs,
                                                                               strict=True)]
    assert seqs.tolist() == [seq for seq, _ in want] and 3 not in seqs.tolist()
    np.testing.assert_array_equal(vectors, np.vstack([v for _, v in want]))
