"""The one place Numba options are set. numba is imported only by kernel modules."""

from __future__ import annotations

import os
import types
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
    """Like ``kernel``, but the GIL is kept while it runs. ``func`` (or a kernel's
    ``py_func``) is compiled as a copy named ``<name>_short``: Numba's on-disk cache files an
    entry under the function's name and keys it by signature and bytecode, not by options, so
    a function compiled both ways would load one cached machine code for both, and the
    first compiled decides whether either keeps the GIL."""
    plain = getattr(func, "py_func", func)
    copy = types.FunctionType(plain.__code__, plain.__globals__, f"{plain.__name__}_short",
                              plain.__defaults__, plain.__closure__)
    copy.__qualname__ = f"{plain.__qualname__}_short"
    copy.__module__ = plain.__module__
    copy.__doc__ = plain.__doc__
    return numba.njit(**SHORT_OPTIONS)(copy)  # type: ignore[no-any-return]
