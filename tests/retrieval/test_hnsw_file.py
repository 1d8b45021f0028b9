"""hnswlib 0.8's index file, read without hnswlib: the layout ``hnsw_file`` assumes matches
what hnswlib writes, and a scrubbed file still loads and answers, without the vectors of
the erased labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sidecar.retrieval.vector import hnsw_file
from sidecar.retrieval.vector.hnsw import HnswVectors

DIM = 16


def unit(rows: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((rows, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_scrub_zeroes_exactly_the_erased_vectors(tmp_path: Path) -> None:
    labels = np.arange(1, 201, dtype=np.int64)
    vectors = unit(200, 1)
    index = HnswVectors(DIM, capacity=256)
    index.add(labels, vectors)
    erased = [5, 77, 200]
    index.remove(np.array(erased))
    path = tmp_path / "vectors.hnsw"
    index.save(path)
    raw = path.read_bytes()
    assert all(vectors[label - 1].tobytes() in raw for label in erased)  # hnswlib keeps them
    assert hnsw_file.scrub(path, set(erased) | {9999}, DIM) == len(erased)
    raw = path.read_bytes()
    for label in labels.tolist():
        assert (vectors[label - 1].tobytes() in raw) == (label not in erased), label
    live = np.array([x for x in labels.tolist() if x not in erased])
    loaded = HnswVectors.load(path, DIM, live, ef_search=64)
    for label in (1, 50, 150):
        found, scores = loaded.search(vectors[label - 1], 1)
        assert found.tolist() == [label] and scores[0] == pytest.approx(1.0, abs=1e-5)
    assert hnsw_file.scrub(path, set(), DIM) == 0


def test_a_file_of_another_dimension_is_refused(tmp_path: Path) -> None:
    index = HnswVectors(DIM, capacity=16)
    index.add(np.arange(1, 4, dtype=np.int64), unit(3, 2))
    path = tmp_path / "vectors.hnsw"
    index.save(path)
    with pytest.raises(ValueError, match="dimension"):
        hnsw_file.scrub(path, {1}, DIM * 64)
