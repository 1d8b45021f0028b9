"""Run every kernel test again with NUMBA_DISABLE_JIT=1, so the kernels run as plain Python
(what coverage sees) and must agree with the references there too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

KERNEL_TESTS = Path(__file__).resolve().parent


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="already the no-JIT run")
def test_kernel_tests_pass_without_jit() -> None:
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(KERNEL_TESTS)],
        env=env, capture_output=True, text=True, timeout=300,
        cwd=KERNEL_TESTS.parent.parent,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
