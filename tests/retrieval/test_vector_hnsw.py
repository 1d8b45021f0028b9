"""The hnswlib adapter against the exact DenseVectors reference (synthetic clustered vectors)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from sidecar.retrieval.vector.exact import DenseVectors
from sidecar.retrieval.vector.hnsw import HnswVectors
from tests.retrieval.synthetic import clustered, normalise

DIM = 32


def pair(n: int, seed: int = 0, first_label: int = 1) -> tuple[HnswVectors, DenseVectors,
                                                             np.ndarray, np.ndarray]:
    vectors = clustered(n, DIM, seed)
    labels = np.arange(first_label, first_label + n, dtype=np.int64)
    hnsw = HnswVectors(DIM, ef_search=128, capacity=16)  # tiny capacity: forces resizes
    dense = DenseVectors(DIM)
    hnsw.add(labels, vectors)
    dense.add(labels, vectors)
    return hnsw, dense, labels, vectors


def recall(got: np.ndarray, want: np.ndarray) -> float:
    return len(set(got.tolist()) & set(want.tolist())) / max(1, len(want))


def check_result(hnsw: HnswVectors, dense: DenseVectors, query: np.ndarray,
                 labels: np.ndarray, scores: np.ndarray) -> None:
    """Scores are the exact cosines, sorted descending."""
    np.testing.assert_allclose(scores, dense.cosine(query, labels), atol=1e-5)
    assert np.all(np.diff(scores) <= 1e-6)


def test_search_matches_exact_reference() -> None:
    hnsw, dense, _, _ = pair(3000)
    queries = clustered(50, DIM, seed=9)
    recalls = []
    for q in queries:
        got, scores = hnsw.search(q, 20)
        want, _ = dense.search(q, 20)
        check_result(hnsw, dense, q, got, scores)
        recalls.append(recall(got, want))
    assert len(hnsw) == 3000 and hnsw.element_count() == 3000
    assert np.mean(recalls) >= 0.97


def test_upsert_replaces_the_vector_in_place() -> None:
    hnsw, dense, labels, _ = pair(1000)
    fresh = normalise(np.random.default_rng(5).standard_normal((10, DIM)))
    hnsw.add(labels[:10], fresh)
    dense.add(labels[:10], fresh)
    assert len(hnsw) == 1000 and hnsw.element_count() == 1000
    for label, vector in zip(labels[:10], fresh, strict=True):
        got, scores = hnsw.search(vector, 1)
        assert got.tolist() == [label] and scores[0] == pytest.approx(1.0, abs=1e-5)


def test_duplicate_labels_in_one_batch_last_wins() -> None:
    hnsw = HnswVectors(DIM)
    vectors = clustered(3, DIM, seed=2)
    hnsw.add(np.array([7, 7, 8]), vectors)
    assert len(hnsw) == 2 and hnsw.element_count() == 2
    got, scores = hnsw.search(vectors[1], 1)
    assert got.tolist() == [7] and scores[0] == pytest.approx(1.0, abs=1e-5)


def test_removed_labels_never_come_back_and_slots_are_reused() -> None:
    hnsw, dense, labels, vectors = pair(2000)
    gone = labels[::2]
    hnsw.remove(gone)
    hnsw.remove(gone[:10])  # twice: no error
    hnsw.remove(np.array([999_999]))  # unknown: no error
    dense.remove(gone)
    assert len(hnsw) == 1000
    for q in vectors[:40:2]:  # queries sitting exactly on removed vectors
        got, scores = hnsw.search(q, 30)
        assert not set(got.tolist()) & set(gone.tolist())
        check_result(hnsw, dense, q, got, scores)
    new_labels = np.arange(10_000, 11_000, dtype=np.int64)
    hnsw.add(new_labels, clustered(1000, DIM, seed=3))
    assert len(hnsw) == 2000 and hnsw.element_count() == 2000  # deleted slots reused


def test_removed_label_can_be_added_again() -> None:
    hnsw, _, labels, vectors = pair(500)
    hnsw.remove(labels[:20])
    # labels[10:20]: revived while they still own their slot; labels[:10]: their slots
    # are taken by new labels first, so they come back as new labels.
    hnsw.add(np.arange(5000, 5010, dtype=np.int64), clustered(10, DIM, seed=4))
    revived = normalise(np.random.default_rng(6).standard_normal((20, DIM)))
    hnsw.add(labels[:20], revived)
    assert len(hnsw) == 510
    for label, vector in zip(labels[:20], revived, strict=True):
        got, _ = hnsw.search(vector, 1)
        assert got.tolist() == [label]
    everything, _ = hnsw.search(vectors[0], 10_000)
    assert len(everything) == len(set(everything.tolist())) == 510  # no ghost copies


def test_k_is_clamped_to_the_live_count() -> None:
    hnsw, dense, labels, vectors = pair(40)
    hnsw.remove(labels[:15])
    dense.remove(labels[:15])
    got, scores = hnsw.search(vectors[0], 100)
    want, _ = dense.search(vectors[0], 100)
    assert sorted(got.tolist()) == sorted(want.tolist()) and len(got) == 25
    check_result(hnsw, dense, vectors[0], got, scores)
    assert len(HnswVectors(DIM).search(vectors[0], 5)[0]) == 0
    assert len(hnsw.search(vectors[0], 0)[0]) == 0


@pytest.mark.parametrize("modulus", [2, 10, 97])
def test_filtered_search_returns_k_accepted_like_exact(modulus: int) -> None:
    hnsw, dense, _, _ = pair(4000)

    def accept(ls: np.ndarray) -> np.ndarray:
        return ls % modulus == 0

    recalls = []
    for q in clustered(20, DIM, seed=11):
        got, scores = hnsw.search(q, 20, accept)
        want, _ = dense.search(q, 20, accept)
        assert len(got) == len(want) == 20 and accept(got).all()
        check_result(hnsw, dense, q, got, scores)
        recalls.append(recall(got, want))
    assert np.mean(recalls) >= 0.95


def test_filter_with_fewer_matches_than_k_returns_all_of_them() -> None:
    hnsw, dense, labels, vectors = pair(1000)
    wanted = set(labels[[3, 500, 900]].tolist())

    def accept(ls: np.ndarray) -> np.ndarray:
        return np.isin(ls, list(wanted))

    got, _ = hnsw.search(vectors[0], 10, accept)
    assert set(got.tolist()) == wanted
    assert hnsw.search(vectors[0], 10, lambda ls: np.zeros(len(ls), bool))[0].size == 0


def test_query_gives_up_when_the_candidate_budget_runs_out() -> None:
    hnsw, _, labels, vectors = pair(2000)

    def rare(ls: np.ndarray) -> np.ndarray:
        return ls % 500 == 0

    assert hnsw.query(vectors[0], 10, rare, max_candidates=100) is None
    full = hnsw.query(vectors[0], 10, rare)
    assert full is not None and sorted(full[0].tolist()) == [500, 1000, 1500, 2000]


def test_non_blocking_query_steps_aside_while_a_write_runs() -> None:
    hnsw, _, _, vectors = pair(200)
    hnsw._lock.acquire_write()
    try:
        assert hnsw.query(vectors[0], 5, blocking=False) is None
    finally:
        hnsw._lock.release_write()
    assert hnsw.query(vectors[0], 5, blocking=False) is not None


def test_brute_force_fallback_is_exact() -> None:
    hnsw, dense, _, vectors = pair(800)
    got, scores = hnsw._brute_force(vectors[1], 15, lambda ls: ls % 3 == 0)
    want, want_scores = dense.search(vectors[1], 15, lambda ls: ls % 3 == 0)
    assert got.tolist() == want.tolist()
    np.testing.assert_allclose(scores, want_scores, atol=1e-5)


def test_set_ef_and_save_load_round_trip(tmp_path: object) -> None:
    from pathlib import Path

    hnsw, _, labels, vectors = pair(600)
    hnsw.remove(labels[:50])
    hnsw.set_ef(200)
    assert hnsw.ef_search == 200
    path = Path(str(tmp_path)) / "v.hnsw"
    hnsw.save(path)
    loaded = HnswVectors.load(path, DIM, labels[50:], ef_search=77)
    assert len(loaded) == 550 and loaded.ef_search == 77
    for q in vectors[:5]:
        assert loaded.search(q, 10)[0].tolist() == hnsw.search(q, 10)[0].tolist()
    loaded.add(labels[:50], vectors[:50])  # deleted-in-file labels are revived
    assert len(loaded) == 600 and loaded.element_count() == 600
    with pytest.raises(ValueError, match="missing"):
        HnswVectors.load(path, DIM, np.array([123_456]), ef_search=10)


def test_concurrent_searches_and_writes() -> None:
    hnsw, _, labels, _ = pair(1000)
    extra = clustered(2000, DIM, seed=21)
    extra_labels = np.arange(50_000, 52_000, dtype=np.int64)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader(seed: int) -> None:
        queries = clustered(200, DIM, seed=seed)
        try:
            while not stop.is_set():
                for q in queries:
                    got, scores = hnsw.search(q, 10, lambda ls: ls % 2 == 0)
                    assert len(got) == 10 and np.all(got % 2 == 0)
                    assert np.all(np.diff(scores) <= 1e-6)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(s,)) for s in (31, 32, 33)]
    for thread in threads:
        thread.start()
    for start in range(0, 2000, 100):
        hnsw.add(extra_labels[start : start + 100], extra[start : start + 100])
        hnsw.remove(labels[start // 2 : start // 2 + 50])
    stop.set()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    assert len(hnsw) == 2000
