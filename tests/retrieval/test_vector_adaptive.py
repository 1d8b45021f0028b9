"""AdaptiveVectorIndex: exact below the threshold, hnsw above, correct while it builds."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from sidecar.errors import InvalidArgument
from sidecar.retrieval.vector import adaptive as adaptive_module
from sidecar.retrieval.vector.adaptive import AdaptiveVectorIndex
from sidecar.retrieval.vector.bulk import BulkDenseVectors
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.retrieval.vector.exact import DenseVectors
from sidecar.retrieval.vector.hnsw import HnswVectors
from tests.retrieval.synthetic import clustered, normalise

DIM = 32


def adaptive(threshold: int) -> AdaptiveVectorIndex:
    config = VectorConfig(exact_threshold=threshold, persist=False, hnsw_ef_search=128)
    return AdaptiveVectorIndex(DIM, config)


def same_as_exact(index: AdaptiveVectorIndex, exact: DenseVectors, query: np.ndarray, k: int,
                  accept: object = None) -> None:
    got, scores = index.search(query, k, accept)  # type: ignore[arg-type]
    want, want_scores = exact.search(query, k, accept)  # type: ignore[arg-type]
    assert got.tolist() == want.tolist()
    np.testing.assert_allclose(scores, want_scores, atol=1e-6)


def held_builds(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """hnsw builds from now on wait until the returned event is set."""
    release = threading.Event()
    real_build = adaptive_module.build_hnsw

    def slow_build(*args: object, **kwargs: object) -> HnswVectors | None:
        release.wait()
        return real_build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(adaptive_module, "build_hnsw", slow_build)
    return release


def test_below_the_threshold_search_is_exact() -> None:
    vectors = clustered(500, DIM, seed=1)
    labels = np.arange(1, 501, dtype=np.int64)
    index, exact = adaptive(1000), DenseVectors(DIM)
    index.add(labels, vectors)
    exact.add(labels, vectors)
    index.start()
    assert index.hnsw is None and index.stats()["engine"] == "exact"
    for q in clustered(10, DIM, seed=2):
        same_as_exact(index, exact, q, 25)
        same_as_exact(index, exact, q, 25, lambda ls: ls % 7 == 0)
    np.testing.assert_allclose(index.cosine(vectors[0], labels[:3]), vectors[:3] @ vectors[0],
                               atol=1e-6)
    assert np.isnan(index.cosine(vectors[0], np.array([10_000]))[0])
    np.testing.assert_array_equal(index.vector(1), vectors[0])
    assert index.vector(10_000) is None
    assert len(index.search(vectors[0], 0)[0]) == 0


def test_crossing_the_threshold_builds_in_background_and_replays_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = held_builds(monkeypatch)
    vectors = clustered(700, DIM, seed=3)
    labels = np.arange(1, 701, dtype=np.int64)
    index, exact = adaptive(400), DenseVectors(DIM)
    index.add(labels[:100], vectors[:100])
    exact.add(labels[:100], vectors[:100])
    index.start()
    assert not index.building
    index.add(labels[100:500], vectors[100:500])  # crosses 400: the build starts
    exact.add(labels[100:500], vectors[100:500])
    assert index.building and index.stats()["engine"] == "exact"
    # Writes while the build runs: journalled, and search stays exact meanwhile.
    moved = normalise(np.random.default_rng(4).standard_normal((5, DIM)))
    for target in (index, exact):
        target.add(labels[500:700], vectors[500:700])
        target.remove(labels[:50])
        target.add(labels[60:65], moved)
    for q in vectors[:5]:
        same_as_exact(index, exact, q, 20)
    release.set()
    assert index.wait_ready(30)
    hnsw = index.hnsw
    assert hnsw is not None and len(hnsw) == len(exact) == 650
    assert index.stats()["engine"] == "hnsw"
    for label, vector in zip(labels[60:65], moved, strict=True):
        assert hnsw.search(vector, 1)[0].tolist() == [label]
    for q in vectors[:50]:  # queries on removed vectors: never returned
        assert not set(hnsw.search(q, 10)[0].tolist()) & set(labels[:50].tolist())
    assert set(hnsw.search(vectors[0], 1000)[0].tolist()) == set(labels[50:].tolist())
    index.close()


def test_selective_filters_and_busy_hnsw_fall_back_to_exact() -> None:
    vectors = clustered(3000, DIM, seed=5)
    labels = np.arange(1, 3001, dtype=np.int64)
    index, exact = adaptive(1), DenseVectors(DIM)
    index.add(labels, vectors)
    exact.add(labels, vectors)
    index.start(wait=True)
    assert index.stats()["engine"] == "hnsw"
    for q in clustered(5, DIM, seed=6):
        same_as_exact(index, exact, q, 10, lambda ls: ls % 500 == 0)  # 0.2 %: exact path
        assert len(index.search(q, 10, lambda ls: np.zeros(len(ls), bool))[0]) == 0
    def no_exact(*args: object) -> None:
        raise AssertionError("a 1-in-2 filter must be served by hnsw")

    exact_search = index._dense.search
    index._dense.search = no_exact  # type: ignore[method-assign,assignment]
    for q in clustered(5, DIM, seed=6):  # the filter's rate is sampled, not aliased
        assert np.all(index.search(q, 10, lambda ls: ls % 2 == 0)[0] % 2 == 0)
    index._dense.search = exact_search  # type: ignore[method-assign]
    hnsw = index.hnsw
    assert hnsw is not None
    hnsw._lock.acquire_write()  # a write in progress: search must not wait for it
    try:
        for q in clustered(5, DIM, seed=7):
            same_as_exact(index, exact, q, 10)
    finally:
        hnsw._lock.release_write()
    index.close()


def test_concurrent_searches_while_writing_and_building() -> None:
    vectors = clustered(3000, DIM, seed=8)
    labels = np.arange(1, 3001, dtype=np.int64)
    index = adaptive(1000)
    index.start()
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader(seed: int) -> None:
        try:
            queries = clustered(100, DIM, seed=seed)
            while not stop.is_set():
                for q in queries:
                    got, scores = index.search(q, 10, lambda ls: ls % 3 != 0)
                    assert np.all(got % 3 != 0) and np.all(got > 0)
                    assert len(set(got.tolist())) == len(got)
                    assert np.all(np.diff(scores) <= 1e-6)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(s,)) for s in (40, 41)]
    for thread in threads:
        thread.start()
    for start in range(0, 3000, 150):
        index.add(labels[start : start + 150], vectors[start : start + 150])
        if start >= 300:
            index.remove(labels[start - 300 : start - 290])
    assert index.wait_ready(60)
    stop.set()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    exact = DenseVectors(DIM)
    exact.add(labels, vectors)
    for start in range(300, 3000, 150):
        exact.remove(labels[start - 300 : start - 290])
    assert len(index) == len(exact) and index.stats()["engine"] == "hnsw"
    hits = [len(set(index.search(q, 10)[0].tolist()) & set(exact.search(q, 10)[0].tolist()))
            for q in vectors[::100]]
    assert np.mean(hits) >= 9.5
    index.close()


@pytest.mark.parametrize(("key", "value"), [
    ("hnsw_m", 1), ("hnsw_ef_search", 0), ("exact_threshold", -1),
    ("filter_exact_fraction", 0.0), ("save_min_interval_s", -1.0), ("save_every_changes", 0),
])
def test_config_rejects_bad_values_naming_the_key(key: str, value: object) -> None:
    config = VectorConfig(**{key: value})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=key) as err:
        AdaptiveVectorIndex(DIM, config)
    assert err.value.field == f"retrieval.vector.{key}"


def test_filter_rate_sample_does_not_alias_with_the_labels() -> None:
    dense = BulkDenseVectors(DIM)
    dense.add(np.arange(1, 2561, dtype=np.int64), clustered(2560, DIM, seed=12))
    sample = dense.sample_labels(256, np.random.default_rng(0))
    assert len(sample) == 256 and 0.35 < np.mean(sample % 2 == 0) < 0.65
    assert np.mean(sample % 10 == 0) < 0.3


def test_bulk_dense_vectors_match_dense_vectors() -> None:
    bulk, plain = BulkDenseVectors(DIM, capacity=16), DenseVectors(DIM, capacity=16)
    vectors = clustered(3000, DIM, seed=13)
    labels = np.arange(5, 3005, dtype=np.int64)
    bulk.reserve(100)
    for target in (bulk, plain):
        for start in range(0, 2000, 300):  # fresh labels: the bulk path, growing
            target.add(labels[start : start + 300], vectors[start : start + 300])
        target.add(labels[:10], vectors[2000:2010])  # updates
        target.remove(labels[100:200])
        target.add(labels[2000:2500], vectors[2000:2500])  # free slots: the per-row path
        target.add(labels[2500:], vectors[2500:])
        target.add(np.array([9_000, 9_000]), vectors[:2])  # duplicate in one batch
    assert len(bulk) == len(plain) == 2901
    for q in clustered(5, DIM, seed=14):
        got = bulk.search(q, 30, lambda ls: ls % 2 == 0)[0]
        assert got.tolist() == plain.search(q, 30, lambda ls: ls % 2 == 0)[0].tolist()
    np.testing.assert_array_equal(bulk.vector(9_000), plain.vector(9_000))
    np.testing.assert_array_equal(bulk.vector(5), vectors[2000])
    snap_labels, snap_matrix = bulk.copy_rows()
    assert sorted(snap_labels.tolist()) == sorted(
        set(labels.tolist()) - set(labels[100:200].tolist()) | {9_000})
    for label, row in zip(snap_labels[:50], snap_matrix[:50], strict=True):
        np.testing.assert_array_equal(row, plain.vector(int(label)))


def test_live_rows_are_the_snapshot_without_a_copy_after_a_bulk_load() -> None:
    bulk = BulkDenseVectors(DIM)
    vectors = normalise(np.random.default_rng(15).standard_normal((300, DIM)))
    bulk.add(np.arange(1, 301, dtype=np.int64), vectors)
    for removed in (False, True):
        labels, matrix = bulk.live_rows()
        snap_labels, snap_matrix = bulk.copy_rows()
        np.testing.assert_array_equal(labels, snap_labels)
        np.testing.assert_array_equal(matrix, snap_matrix)
        assert np.shares_memory(matrix, bulk._matrix) is not removed
        bulk.remove(np.arange(1, 301, 3, dtype=np.int64))


def test_journal_is_replayed_mostly_without_blocking_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    real_build, real_replay = adaptive_module.build_hnsw, adaptive_module._replay

    def slow_build(*args: object, **kwargs: object) -> HnswVectors | None:
        release.wait()
        return real_build(*args, **kwargs)  # type: ignore[arg-type]

    vectors = clustered(900, DIM, seed=15)
    labels = np.arange(1, 901, dtype=np.int64)
    index, exact = adaptive(300), DenseVectors(DIM)
    replays: list[int] = []
    during: list[bool] = []

    def replay_and_write(hnsw: HnswVectors, journal: list) -> None:  # type: ignore[type-arg]
        replays.append(len(journal))
        if len(replays) == 1:  # a write arriving while the first round replays
            writer = threading.Thread(target=index.add, args=(labels[850:], vectors[850:]))
            writer.start()
            writer.join(10)
            during.append(not writer.is_alive())
        real_replay(hnsw, journal)

    monkeypatch.setattr(adaptive_module, "build_hnsw", slow_build)
    monkeypatch.setattr(adaptive_module, "_replay", replay_and_write)
    index.start()
    index.add(labels[:300], vectors[:300])  # the build starts
    for start in range(300, 850, 10):  # 55 journalled writes, one of them a removal
        index.add(labels[start : start + 10], vectors[start : start + 10])
    index.remove(labels[:20])
    release.set()
    assert index.wait_ready(30)
    assert replays[0] == 56 and during == [True]  # the write did not wait for the replay
    assert len(replays) == 2 and replays[1] == 1  # its entry: replayed at the hand-over
    exact.add(labels, vectors)
    exact.remove(labels[:20])
    hnsw = index.hnsw
    assert hnsw is not None and len(hnsw) == len(exact) == 880
    assert set(hnsw.search(vectors[0], 1000)[0].tolist()) == set(labels[20:].tolist())
    index.close()


def test_replacing_every_vector_rebuilds_hnsw_with_exact_search_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = clustered(600, DIM, seed=11)
    labels = np.arange(1, 601, dtype=np.int64)
    index = adaptive(400)
    index.add(labels, vectors)
    index.start(wait=True)
    assert index.hnsw is not None
    release = held_builds(monkeypatch)
    replaced = clustered(600, DIM, seed=12)  # another model's vectors of the same rows
    exact = DenseVectors(DIM)
    exact.add(labels, replaced)
    index.replace_all(labels, replaced)
    assert index.hnsw is None and index.building  # the old graph is gone at once
    for q in replaced[:5]:
        same_as_exact(index, exact, q, 20)
    release.set()
    assert index.wait_ready(30)
    hnsw = index.hnsw
    assert hnsw is not None and len(hnsw) == 600
    for label, vector in zip(labels[:20], replaced[:20], strict=True):
        assert hnsw.search(vector, 1)[0].tolist() == [label]
    index.close()
