"""What a vector index offers. Labels are memory ``seq`` values (SQLite rowids)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np

from sidecar.retrieval.contract import Accept


class VectorIndex(Protocol):
    dim: int

    def __len__(self) -> int: ...

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        """Insert or replace (upsert) rows; vectors are L2-normalised float32."""
        ...

    def remove(self, labels: np.ndarray) -> None: ...

    def search(
        self, query: np.ndarray, k: int, accept: Accept | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k accepted labels by cosine, descending: (labels int64, scores float32)."""
        ...

    def search_within(
        self, query: np.ndarray, k: int, labels: np.ndarray, accept: Accept | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k among ``labels`` only (unknown labels skipped), like ``search``."""
        ...

    def cosine(self, query: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Exact cosine of the query with each label (nan for unknown labels)."""
        ...

    def rows_of(self, labels: np.ndarray) -> np.ndarray:
        """Copies of the rows of ``labels`` (n, dim); a row of nan for an unknown label."""
        ...

    def vector(self, label: int) -> np.ndarray | None: ...

    def locked_rows(self) -> AbstractContextManager[tuple[np.ndarray, np.ndarray]]:
        """Holds writes off; yields (label -> row index, -1 = none; the float32 matrix)."""
        ...

    def scan(self, query: np.ndarray, accept: Accept) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosine of the query with every live accepted row: (labels, scores)."""
        ...

    def rows(self, accept: Accept) -> tuple[np.ndarray, np.ndarray]:
        """(labels ascending, a copy of their rows) of the live accepted rows."""
        ...
