"""The server's numpy BLAS runs one thread unless the operator sets another count."""

from __future__ import annotations

import os
import subprocess
import sys

# Imports the package as ``memsidecar`` and ``python -m sidecar`` do, then reads the count
# the BLAS took at load (numpy's bundled OpenBLAS; its environment variable where another
# BLAS is bundled).
PROBE = """
import ctypes, glob, os
import sidecar
import numpy
libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__), "..", "numpy.libs", "*openblas*"))
getter = None
for path in libs:
    lib = ctypes.CDLL(path)
    for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                 "openblas_get_num_threads"):
        getter = getattr(lib, name, None) or getter
print(getter() if getter else os.environ["OPENBLAS_NUM_THREADS"])
"""


def _threads(**env: str) -> int:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env},
                         capture_output=True, text=True, check=True, timeout=60)
    return int(out.stdout.strip())


def test_one_blas_thread_by_default() -> None:
    assert _threads() == 1


def test_the_operators_count_is_kept() -> None:
    assert _threads(OPENBLAS_NUM_THREADS="2") == 2
