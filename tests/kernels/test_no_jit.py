"""Run the kernel tests again with NUMBA_DISABLE_JIT=1, so coverage sees inside the kernels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="already without JIT")
def test_kernel_tests_pass_without_jit() -> None:
    files = sorted(str(p) for p in HERE.glob("test_*.py") if p.name != Path(__file__).name)
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    cov = ["--cov=kernels", "--cov-append"] if os.environ.get("COV_CORE_SOURCE") else []
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *cov, *files],
        env=env, capture_output=True, text=True, timeout=300,
        cwd=HERE.parent.parent,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout
