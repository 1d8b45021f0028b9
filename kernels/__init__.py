"""Numba kernels for the hot path: arrays and scalars in, arrays out; no I/O, no objects.

Each kernel module registers a warm-up so it is compiled at server start, never on the
first request (``warm_up_all``). Numba flags live in ``kernels.flags``.
"""

from kernels.warmup import register, warm_up_all

__all__ = ["register", "warm_up_all"]
