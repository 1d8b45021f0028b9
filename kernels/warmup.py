"""Compile every kernel once at server start, before health says SERVING."""

from __future__ import annotations

import time
from collections.abc import Callable

from kernels import (
    bm25,
    dedup,
    diversity,
    graph_walk,
    held,
    maxscore,
    pairs,
    pool,
    pool_fusion,
    rrf,
    score_fusion,
)

WARM_UPS: dict[str, Callable[[], object]] = {
    "bm25": bm25.warm_up,
    "dedup": dedup.warm_up,
    "diversity": diversity.warm_up,
    "graph_walk": graph_walk.warm_up,
    "held": held.warm_up,
    "maxscore": maxscore.warm_up,
    "pairs": pairs.warm_up,
    "pool": pool.warm_up,
    "pool_fusion": pool_fusion.warm_up,
    "rrf": rrf.warm_up,
    "score_fusion": score_fusion.warm_up,
}


def warm_up_all() -> dict[str, float]:
    """Run every kernel module's warm-up; returns seconds spent per module."""
    spent: dict[str, float] = {}
    for name, func in WARM_UPS.items():
        start = time.perf_counter()
        func()
        spent[name] = time.perf_counter() - start
    return spent
