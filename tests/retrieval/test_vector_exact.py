from __future__ import annotations

import numpy as np

from sidecar.retrieval.vector import exact
from sidecar.retrieval.vector.bulk import BulkDenseVectors
from sidecar.retrieval.vector.exact import DenseVectors


def unit(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_dense_matches_brute_force_with_filter_and_updates() -> None:
    vecs = unit(3000, 32, 0)
    index = DenseVectors(dim=32, capacity=16)
    labels = np.arange(10, 3010, dtype=np.int64)
    index.add(labels, vecs)
    index.remove(labels[:100])
    index.add(labels[100:110], unit(10, 32, 1))  # replace in place
    vecs[100:110] = unit(10, 32, 1)
    q = unit(1, 32, 2)[0]
    got_labels, got_scores = index.search(q, 20, accept=lambda ls: ls % 2 == 0)
    live = np.arange(100, 3000)
    live = live[labels[live] % 2 == 0]
    scores = vecs[live] @ q
    order = np.argsort(-scores)[:20]
    assert got_labels.tolist() == labels[live[order]].tolist()
    np.testing.assert_allclose(got_scores, scores[order], rtol=1e-5)
    assert len(index) == 2900
    cos = index.cosine(q, np.array([labels[0], labels[200]]))
    assert np.isnan(cos[0]) and np.isclose(cos[1], vecs[200] @ q, atol=1e-5)
    assert index.vector(int(labels[0])) is None


def test_scan_rows_and_rows_of_match_numpy() -> None:
    vecs = unit(500, 16, 3)
    index = DenseVectors(dim=16, capacity=8)
    labels = np.arange(1, 501, dtype=np.int64)
    index.add(labels, vecs)
    index.remove(labels[::5])  # freed slots are reused below
    index.add(np.arange(600, 650, dtype=np.int64), unit(50, 16, 4))
    truth = {int(label): vecs[i] for i, label in enumerate(labels) if i % 5}
    truth.update(zip(range(600, 650), unit(50, 16, 4), strict=True))
    q = unit(1, 16, 5)[0]

    def odd(ls: np.ndarray) -> np.ndarray:
        return np.asarray(ls % 2 == 1)

    wanted = sorted(label for label in truth if label % 2 == 1)
    got_labels, got_scores = index.scan(q, odd)
    order = np.argsort(got_labels)
    assert got_labels[order].tolist() == wanted
    np.testing.assert_allclose(got_scores[order], [truth[w] @ q for w in wanted], atol=1e-6)
    rows_labels, rows = index.rows(odd)
    assert rows_labels.tolist() == wanted
    np.testing.assert_array_equal(rows, np.array([truth[w] for w in wanted]))
    picked = np.array([wanted[3], 6, wanted[0]], np.int64)  # 6 was removed
    got = index.rows_of(picked)
    np.testing.assert_array_equal(got[[0, 2]], [truth[wanted[3]], truth[wanted[0]]])
    assert np.isnan(got[1]).all()


def test_k_larger_than_live_count_is_clamped() -> None:
    index = DenseVectors(dim=8)
    index.add(np.array([1, 2], dtype=np.int64), unit(2, 8, 3))
    got, _ = index.search(unit(1, 8, 4)[0], 50)
    assert sorted(got.tolist()) == [1, 2]
    empty = DenseVectors(dim=8)
    assert len(empty.search(unit(1, 8, 4)[0], 5)[0]) == 0


def _reuse_slot_inside_accept(index: DenseVectors, victim: int, intruder: int,
                              vector: np.ndarray) -> object:
    """A filter accepting even labels that, on its first call (after the search took its
    snapshot, before it reads the answer), forgets ``victim`` and adds the odd ``intruder``,
    which takes the victim's freed slot: the interleaving that leaked rejected labels."""
    calls: list[int] = []

    def accept(labels: np.ndarray) -> np.ndarray:
        mask = labels % 2 == 0
        if not calls:
            index.remove(np.array([victim]))
            index.add(np.array([intruder]), vector[None, :])
        calls.append(len(labels))
        return mask

    return accept


def test_slot_reused_during_a_search_never_leaks_a_rejected_label() -> None:
    vecs = unit(200, 16, 5)
    q = vecs[0]
    for bulk in (False, True):
        index = BulkDenseVectors(16) if bulk else DenseVectors(16)
        labels = np.arange(2, 402, 2, dtype=np.int64)  # even: all accepted
        index.add(labels, vecs)
        victim = int(labels[0])  # the best match of q
        got, scores = index.search(q, 5, _reuse_slot_inside_accept(index, victim, 7, q))
        assert 7 not in got.tolist() and victim not in got.tolist()
        assert np.all(got % 2 == 0) and np.all(got > 0) and len(got) == 5
        np.testing.assert_allclose(scores, index.cosine(q, got), atol=1e-6)


def test_scores_belong_to_the_returned_labels_when_a_slot_is_reused() -> None:
    vecs = unit(100, 16, 6)
    q = vecs[0]
    index = DenseVectors(16)
    labels = np.arange(2, 202, 2, dtype=np.int64)
    index.add(labels, vecs)
    # The even newcomer 1000 takes the slot of the best match (label 2) with a vector far
    # from q: a stale answer would return 1000 with label 2's score (1.0).
    got, scores = index.search(q, 3, _reuse_slot_inside_accept(index, 2, 1000, -q))
    assert 2 not in got.tolist()
    np.testing.assert_allclose(scores, index.cosine(q, got), atol=1e-6)
    assert np.all(np.diff(scores) <= 1e-6)


def test_search_under_constant_writes_falls_back_to_a_locked_view() -> None:
    vecs = unit(100, 16, 7)
    index = DenseVectors(16)
    labels = np.arange(2, 202, 2, dtype=np.int64)
    index.add(labels, vecs)
    calls: list[int] = []

    def accept(found: np.ndarray) -> np.ndarray:
        calls.append(len(found))
        index.add(labels[:1], vecs[:1])  # rewrites the best match's slot every time
        return found % 4 == 2

    got, scores = index.search(vecs[0], 4, accept)
    assert len(calls) == exact._OPTIMISTIC_TRIES + 1  # optimistic tries, then locked
    want = labels[labels % 4 == 2]
    order = np.argsort(-(vecs[labels % 4 == 2] @ vecs[0]), kind="stable")[:4]
    assert got.tolist() == want[order].tolist()
    np.testing.assert_allclose(scores, index.cosine(vecs[0], got), atol=1e-6)


def test_search_within_a_superset_of_the_accepted_labels_is_the_full_search() -> None:
    """The scopes' candidates hold every label ``accept`` takes (and others, and labels the
    index lacks): the same top-k, scores and order as scoring every row."""
    vecs = unit(2000, 24, 5)
    index = DenseVectors(dim=24, capacity=16)
    labels = np.arange(1, 2001, dtype=np.int64)
    index.add(labels, vecs)
    index.remove(labels[::7])  # freed slots, taken again below
    index.add(np.arange(2001, 2031, dtype=np.int64), vecs[1:31])  # twins: ties, slot order
    rng = np.random.default_rng(6)
    for trial in range(20):
        q = unit(1, 24, 100 + trial)[0]
        q = vecs[1 + trial] + 0.05 * q  # near a twinned row
        taken = rng.random(2031) < rng.choice([0.01, 0.05, 0.3])

        def accept(ls: np.ndarray, taken: np.ndarray = taken) -> np.ndarray:
            return taken[ls]

        extra = rng.random(2031) < 0.05
        candidates = rng.permutation(np.concatenate(
            [np.flatnonzero(taken | extra), [5000, 7001]]).astype(np.int64))
        for k in (1, 10, 50):
            want_labels, want_scores = index.search(q, k, accept)
            got_labels, got_scores = index.search_within(q, k, candidates, accept)
            assert got_labels.tolist() == want_labels.tolist()
            np.testing.assert_allclose(got_scores, want_scores, rtol=1e-6)
    # without a filter: the best of the candidates alone; none known: nothing
    q = unit(1, 24, 9)[0]
    some = np.array([3, 4, 5, 9000], np.int64)
    got, scores = index.search_within(q, 10, some)
    alive = [label for label in (3, 4, 5) if (label - 1) % 7]
    assert sorted(got.tolist()) == alive
    np.testing.assert_allclose(scores, np.sort(vecs[np.array(alive) - 1] @ q)[::-1], atol=1e-6)
    assert len(index.search_within(q, 10, np.array([9000], np.int64))[0]) == 0
