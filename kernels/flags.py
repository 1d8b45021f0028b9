"""The one place Numba options are set. numba is imported only by kernel modules."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import numba

F = TypeVar("F", bound=Callable[..., Any])

# cache=True writes compiled code next to the module (__pycache__) so restarts are fast;
# NUMBA_DISABLE_JIT=1 (coverage runs) turns every kernel back into plain Python.
JIT_OPTIONS: dict[str, Any] = {
    "nogil": True,
    "cache": os.environ.get("MEMSIDECAR_NUMBA_CACHE", "1") == "1",
    "fastmath": False,
    "boundscheck": False,
}


def kernel(func: F) -> F:
    """Compile ``func`` with the project's options (nopython, nogil, cached)."""
    return numba.njit(**JIT_OPTIONS)(func)  # type: ignore[no-any-return]


# For sums that may be reordered (dot products vectorised into SIMD partial sums): the
# result may differ from a sequential sum in the last bits.
REASSOCIATE_OPTIONS: dict[str, Any] = {**JIT_OPTIONS, "fastmath": {"reassoc", "contract"}}


def reassociating_kernel(func: F) -> F:
    """Like ``kernel``, but floating-point sums may be reassociated (vectorised)."""
    return numba.njit(**REASSOCIATE_OPTIONS)(func)  # type: ignore[no-any-return]


# For kernels that run for microseconds on a call's path: they keep the GIL. Released, it
# must be taken back from whichever thread took it meanwhile, which a busy thread (a capture
# being written, a search) gives up only at its switch interval (5 ms).
SHORT_OPTIONS: dict[str, Any] = {**JIT_OPTIONS, "nogil": False}


def short_kernel(func: F) -> F:
    """Like ``kernel``, but the GIL is kept while it runs."""
    return numba.njit(**SHORT_OPTIONS)(func)  # type: ignore[no-any-return]
