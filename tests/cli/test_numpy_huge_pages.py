"""The server's numpy asks for no transparent huge pages unless the operator says so."""

from __future__ import annotations

import os
import subprocess
import sys

# Imports the package as ``memsidecar`` and ``python -m sidecar`` do (first), then asks numpy
# whether it advises huge pages for its large arrays.
PROBE = """
import sidecar
import numpy
from numpy._core import multiarray
print(int(multiarray._get_madvise_hugepage()))
"""


def _advised(**env: str) -> bool:
    clean = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env},
                         capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip() == "1"


def test_no_huge_pages_by_default() -> None:
    assert not _advised()


def test_the_operators_choice_is_kept() -> None:
    assert _advised(NUMPY_MADVISE_HUGEPAGE="1")
