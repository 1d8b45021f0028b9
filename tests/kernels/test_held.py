"""``kernels.held``: terms held and BM25 contributions per document, against the formula
written out per document and term."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.held import held_scores


def naive(docs: list[dict[int, float] | None], lengths: list[float],
          wanted: dict[int, tuple[bool, bool, float]], k1: float, b: float,
          avgdl: float) -> tuple[list[int], list[float]]:
    held, scores = [], []
    for doc, length in zip(docs, lengths, strict=True):
        if doc is None:
            held.append(-1)
            scores.append(0.0)
            continue
        count, total = 0, 0.0
        for term in sorted(doc):
            if term not in wanted:
                continue
            counted, scored, value = wanted[term]
            count += counted
            if scored:
                tf = doc[term]
                total += value * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))
        held.append(count)
        scores.append(total)
    return held, scores


@pytest.mark.parametrize("seed", range(6))
def test_matches_the_formula_per_document(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocab = 40
    docs: list[dict[int, float] | None] = []
    for _ in range(int(rng.integers(0, 25))):
        if rng.random() < 0.15:
            docs.append(None)
            continue
        ids = rng.choice(vocab, size=int(rng.integers(0, 20)), replace=False)
        docs.append({int(t): float(rng.integers(1, 5)) for t in ids})
    lengths = [float(rng.integers(1, 80)) for _ in docs]
    wanted = {int(t): (bool(rng.random() < 0.6), bool(rng.random() < 0.7),
                       float(rng.normal(2.0, 1.5)))
              for t in rng.choice(vocab + 5, size=int(rng.integers(0, 12)), replace=False)}
    present = [sorted(d.items()) for d in docs if d is not None]
    order = sorted(wanted)
    got = held_scores(
        np.array([t for d in present for t, _ in d], np.int64),
        np.array([tf for d in present for _, tf in d], np.float32),
        np.array([-1 if d is None else len(d) for d in docs], np.int64),
        np.array(lengths, np.float64), np.array(order, np.int64),
        np.array([wanted[t][0] for t in order], bool),
        np.array([wanted[t][1] for t in order], bool),
        np.array([wanted[t][2] for t in order], np.float64), 1.5, 0.75, 31.5)
    held, scores = naive(docs, lengths, wanted, 1.5, 0.75, 31.5)
    assert got[0].tolist() == held
    np.testing.assert_allclose(got[1], scores, rtol=1e-12, atol=1e-12)


def test_refuses_arrays_that_do_not_fit() -> None:
    one, two = np.zeros(1, np.int64), np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="matching"):
        held_scores(one, np.zeros(1, np.float32), one, np.zeros(2), one, np.zeros(1, bool),
                    np.zeros(1, bool), np.zeros(1), 1.5, 0.75, 1.0)
    with pytest.raises(ValueError, match="add up"):
        held_scores(one, np.zeros(1, np.float32), two[:1] + 3, np.zeros(1), one,
                    np.zeros(1, bool), np.zeros(1, bool), np.zeros(1), 1.5, 0.75, 1.0)
    with pytest.raises(ValueError, match="avgdl"):
        held_scores(one, np.zeros(1, np.float32), one + 1, np.zeros(1), one,
                    np.zeros(1, bool), np.ones(1, bool), np.zeros(1), 1.5, 0.75, 0.0)
