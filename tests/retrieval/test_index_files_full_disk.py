"""The hnsw index and BM25 postings saved on a full disk (a small tmpfs): the save fails
with ENOSPC, leaves no temp file and keeps the file saved before (hnswlib does not check its
writes: a cut-short index must never replace a whole one)."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sidecar.retrieval.lexical import persist as lexical
from sidecar.retrieval.lexical.bm25 import BM25Index
from sidecar.retrieval.vector import persist as vector
from sidecar.retrieval.vector.hnsw import HnswVectors
from tests.retrieval.synthetic import clustered
from tests.small_disk import SmallDisk, small_disk

DIM = 64


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    with small_disk(tmp_path / "disk", size="2m") as mounted:
        yield mounted


def hnsw(n: int) -> HnswVectors:
    index = HnswVectors(DIM, capacity=n)
    index.add(np.arange(n, dtype=np.int64), clustered(n, DIM, seed=3))
    return index


def test_hnsw_save_cut_short_by_a_full_disk_is_refused(disk: SmallDisk) -> None:
    path = disk.root / vector.INDEX_FILE
    small = hnsw(50)
    labels = np.arange(50, dtype=np.int64)
    vector.commit(vector.write_file(small, path), path, labels, clustered(50, DIM, seed=3),
                  dim=DIM, m=16, ef_construction=200)
    saved = path.read_bytes()
    with pytest.raises(OSError) as caught:
        vector.write_file(hnsw(8000), path)  # about 3 MB: more than the disk holds
    assert caught.value.errno == errno.ENOSPC
    assert path.read_bytes() == saved
    assert sorted(p.name for p in disk.root.iterdir()) == [vector.INDEX_FILE,
                                                           vector.meta_path(path).name]


def test_bm25_save_on_a_full_disk_leaves_no_temp_file(disk: SmallDisk) -> None:
    path = disk.root / lexical.POSTINGS_FILE
    bm25 = BM25Index()
    texts = [f"deploy {n} of the billing gateway on friday" for n in range(200)]
    bm25.add(list(range(200)), texts, bulk=True)
    bm25.merge()
    disk.fill()
    with pytest.raises(OSError) as caught:
        lexical.save(path, bm25.export(), "checksum")
    assert caught.value.errno == errno.ENOSPC
    disk.free()
    assert [p.name for p in disk.root.iterdir()] == []
