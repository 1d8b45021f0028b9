"""The Rust agent loop's command line (its behaviour: test_compiled_clients.py)."""

from __future__ import annotations

from pathlib import Path

from tests.clients.agent_loops import run


def test_agent_loop_rejects_an_unknown_flag(rust_built: Path) -> None:
    out = run(rust_built / "agent-loop", "127.0.0.1:1", "--chanel", "x", stdin="")
    assert out.code == 1 and "unknown argument --chanel" in out.stderr
