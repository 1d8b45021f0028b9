"""Helpers of the latency suite: skipping pending RPCs, recording machine conditions."""

from __future__ import annotations

import os

import grpc
import pytest
from memsidecar_client import MemsidecarError

MEMORIES = int(os.environ.get("LATENCY_MEMORIES", "10000"))


def require(call: object, rpc: str) -> None:
    """Skip a benchmark, saying so, while the server answers UNIMPLEMENTED for ``rpc``."""
    try:
        call()  # type: ignore[operator]
    except MemsidecarError as err:
        if err.code == grpc.StatusCode.UNIMPLEMENTED:
            pytest.skip(f"PENDING: {rpc} is UNIMPLEMENTED on this server; no number measured")
        raise


def load_note() -> dict[str, object]:
    """Machine conditions recorded with each result."""
    return {"loadavg_1m": round(os.getloadavg()[0], 2), "cores": os.cpu_count(),
            "memories": MEMORIES}
