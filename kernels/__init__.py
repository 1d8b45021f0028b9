"""Numba kernels for the hot path: arrays and scalars in, arrays out; no I/O, no objects.

Each kernel module has a ``warm_up()`` that compiles it on a tiny input; ``kernels.warmup``
runs them all at server start, never on the first request. Numba flags live in
``kernels.flags``.
"""
