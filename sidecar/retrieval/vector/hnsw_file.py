"""Erased vectors out of a saved hnsw index file (hnswlib 0.8.0's layout, no hnswlib call).

hnswlib marks a deleted element and keeps its vector: ``save_index`` writes it like any
other. The file starts with a fixed header (six size_t: level-0 offset, max elements,
element count, bytes per element, label offset, data offset; an int and an unsigned int:
top level, entry point; three size_t, a double, a size_t: maxM, maxM0, M, mult,
ef_construction), then every element's level-0 block of ``bytes per element`` bytes (its
links, then its vector at the data offset, then its label, a size_t, at the label offset).
``scrub`` overwrites with zeros the vector of every element whose label is given; the
element stays in the graph (deleted, never returned), its distance to any query is then
constant. The layout is checked against hnswlib in tests/retrieval/test_hnsw_file.py.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from pathlib import Path

import numpy as np

_HEADER = struct.Struct("<QQQQQQiIQQQdQ")


def scrub(path: Path, labels: Collection[int], dim: int) -> int:
    """Zero the vectors of ``labels`` in the index file at ``path``; how many were found."""
    if not labels:
        return 0
    with path.open("r+b") as handle:
        head = handle.read(_HEADER.size)
    _, _, count, per_element, label_at, data_at = _HEADER.unpack(head)[:6]
    if count == 0:
        return 0
    if data_at + 4 * dim > label_at or label_at + 8 > per_element:
        raise ValueError(f"{path}: not an hnswlib 0.8 index of dimension {dim}")
    blocks = np.memmap(path, dtype=np.uint8, mode="r+", offset=_HEADER.size,
                       shape=(count, per_element))
    try:
        found = np.ascontiguousarray(blocks[:, label_at:label_at + 8]).view("<u8").ravel()
        rows = np.flatnonzero(np.isin(found.astype(np.int64),
                                      np.fromiter(labels, np.int64, len(labels))))
        for row in rows.tolist():
            blocks[row, data_at:data_at + 4 * dim] = 0
        blocks.flush()
    finally:
        del blocks
    return len(rows)
