"""Registry of kernel warm-ups, run once at server start before health says SERVING."""

from __future__ import annotations

import time
from collections.abc import Callable

_WARMUPS: dict[str, Callable[[], object]] = {}


def register(name: str) -> Callable[[Callable[[], object]], Callable[[], object]]:
    def decorate(func: Callable[[], object]) -> Callable[[], object]:
        _WARMUPS[name] = func
        return func

    return decorate


def warm_up_all() -> dict[str, float]:
    """Run every registered warm-up; returns seconds spent per kernel."""
    import kernels.bm25  # noqa: F401
    import kernels.dedup  # noqa: F401
    import kernels.rrf  # noqa: F401

    spent: dict[str, float] = {}
    for name, func in _WARMUPS.items():
        start = time.perf_counter()
        func()
        spent[name] = time.perf_counter() - start
    return spent
