"""The Go and Rust agent-loop templates and latency clients against a real sidecar."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clients.agent_loops import BLOCK_PREFIX, ROOT, check_loop, check_unreachable, run
from tests.conftest import Running

# language -> (fixture building it, the latency client relative to the repository)
CLIENTS = {"go": ("go_built", "build/go-client"), "rust": ("rust_built", "build/rust/bench")}


@pytest.fixture(params=sorted(CLIENTS))
def built(request: pytest.FixtureRequest) -> tuple[str, Path]:
    language = str(request.param)
    folder: Path = request.getfixturevalue(CLIENTS[language][0])
    return language, folder


def test_agent_loop_injects_each_turn_and_seeds_once(built: tuple[str, Path],
                                                     running: Running) -> None:
    language, folder = built
    check_loop(folder / "agent-loop", running, f"{language}-loop")


def test_agent_loop_over_a_unix_socket(built: tuple[str, Path], unix_target: str) -> None:
    language, folder = built
    for addr in (unix_target, unix_target.replace("unix://", "unix:", 1)):
        out = run(folder / "agent-loop", addr, "--channel", f"{language}-unix")
        assert out.code == 0, out.stderr
        assert out.turn_blocks()[0].startswith(BLOCK_PREFIX)


def test_agent_loop_reports_an_unreachable_sidecar(built: tuple[str, Path]) -> None:
    check_unreachable(built[1] / "agent-loop")


def test_latency_client_reports_percentiles(built: tuple[str, Path], running: Running) -> None:
    binary = ROOT / CLIENTS[built[0]][1]
    done = subprocess.run([str(binary), "--addr", running.target, "--bench", "20"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout
    line = done.stdout.splitlines()[-1]
    assert line.startswith("bench inject n=20 ")
    stats = {k: int(v) for k, v in (part.split("=") for part in line.split()[2:])}
    assert 0 < stats["server_p50_us"] <= stats["p50_us"] <= stats["p99_us"] <= stats["max_us"]
