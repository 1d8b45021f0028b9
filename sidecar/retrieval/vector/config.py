"""Settings of the vector index: the TOML ``[retrieval.vector]`` table."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from sidecar.knobs import knob


@dataclass(frozen=True, slots=True)
class VectorConfig:
    """Vector index settings (TOML ``[retrieval.vector]``, nested in ``RetrievalConfig``).

    Ranges and hot/restart flags are field metadata (``knob``): the config loader checks
    them, and ``sidecar.knobs.check_ranges`` when an index is created. Defaults measured by
    bench/bench_vector_index.py. Restart-only keys are kept at their running value by a
    reload; the others reach the running index on the next search
    (``AdaptiveVectorIndex.retune``).
    """

    exact_threshold: int = field(default=5_000, metadata=knob(
        "Below this many live memories vector search is exact numpy (as fast there, and "
        "exact); at or above it hnswlib answers.", ge=0, le=1_000_000_000, restart=True))
    hnsw_m: int = field(default=16, metadata=knob(
        "hnswlib graph degree M; a change rebuilds the saved index.", ge=2, le=128,
        restart=True))
    hnsw_ef_construction: int = field(default=200, metadata=knob(
        "hnswlib build beam; a change rebuilds the saved index.", ge=8, le=4096,
        restart=True))
    hnsw_ef_search: int = field(default=96, metadata=knob(
        "hnswlib search beam (at least k is used); higher = better recall, slower.", ge=8, le=4096))
    hnsw_build_threads: int = field(default=0, metadata=knob(
        "Threads of a full (re)build; 0 = all cores but one.", ge=0, le=256))
    filter_exact_fraction: float = field(default=0.01, metadata=knob(
        "A filtered search goes exact when hnsw would need more candidates than this "
        "fraction of the live count.", ge=0.0001, le=1.0))
    save_every_changes: int = field(default=5_000, metadata=knob(
        "Save the index in the background after this many changed rows ...", ge=1,
        le=1_000_000_000))
    save_min_interval_s: float = field(default=60.0, metadata=knob(
        "... and at least this many seconds after the previous save.", ge=0.0, le=86_400.0))
    persist: bool = field(default=True, metadata=knob(
        "Keep the hnsw index on disk beside the database (DATA_DIR/vectors.hnsw).",
        restart=True))

    def build_threads(self) -> int:
        return self.hnsw_build_threads or max(1, (os.cpu_count() or 2) - 1)
