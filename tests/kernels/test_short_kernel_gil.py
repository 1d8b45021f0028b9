"""A short kernel keeps the GIL also when its machine code comes from Numba's on-disk cache,
where the same function compiled to release it was cached first (``kernels.flags``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent

# Compiles (or loads) both kernels, the one that releases the GIL first; then runs each on
# ~20M posting reads while a thread that was just released waits for the GIL, and prints how
# often it ran during each kernel. The switch interval is made long, so the only way the
# thread runs while the main thread works is a kernel that lets the GIL go.
PROBE = """
import sys, threading
import numpy as np
from kernels.bm25 import bm25_accumulate
n = 100_000
segment = (np.array([0, n], np.int64), np.arange(n, dtype=np.int32), np.ones(n, np.float32))
doc_len, alive = np.ones(n), np.ones(n, np.uint8)
terms, idf = np.zeros(200, np.int64), np.ones(200)
def buffers():
    return np.zeros(n), np.zeros(n, np.uint8), np.zeros(n, np.int64)
def run(short, buffers):
    return bm25_accumulate(segment, doc_len, alive, terms, idf, 1.5, 0.75, 1.0, *buffers, 0,
                           short=short)
run(False, buffers())
run(True, buffers())
sys.setswitchinterval(30.0)
during = {False: 0, True: 0}
for short in (False, True, False, True):
    held, go, ran = buffers(), threading.Event(), []
    waiter = threading.Thread(target=lambda: (go.wait(), ran.append(1)))
    waiter.start()  # returns once it waits for ``go`` (it keeps the GIL until then)
    go.set()  # from here it only needs the GIL, which the main thread holds
    run(short, held)
    during[short] += len(ran)  # read before anything here lets the GIL go
    waiter.join()
sys.setswitchinterval(0.005)
print(during[True], during[False])
"""


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="no compiled kernels")
def test_the_short_kernel_keeps_the_gil_when_loaded_from_the_cache(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "MEMSIDECAR_NUMBA_CACHE": "1",
           "PYTHONPATH": str(ROOT)}
    counts = []
    for _ in range(2):  # compiled and cached, then loaded from the cache
        proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                              text=True, timeout=300, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr[-3000:]
        counts.append([int(x) for x in proc.stdout.split()])
    assert any(tmp_path.rglob("*_accumulate_short*.nbi"))  # an entry of its own
    # the released thread never ran while the short kernel did
    assert [short for short, _ in counts] == [0, 0], counts
