"""Run every kernel test again with NUMBA_DISABLE_JIT=1, so the kernels run as plain Python
(what coverage sees) and must agree with the references there too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

KERNEL_TESTS = Path(__file__).resolve().parent


def test_kernel_tests_pass_without_jit() -> None:
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(KERNEL_TESTS),
         "--deselect", f"{KERNEL_TESTS / 'test_nojit.py'}::test_kernel_tests_pass_without_jit"],
        env=env, capture_output=True, text=True, timeout=600,
        cwd=KERNEL_TESTS.parent.parent,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
