"""The Rust crate (clients/rust) built offline from Debian's crates, run against a real sidecar."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clients.agent_loops import ROOT, build, check_loop, check_unreachable, run
from tests.conftest import Running

BUILT = ROOT / "build" / "rust"


@pytest.fixture(scope="session")
def rust_built() -> Path:
    """`make rust-client`: installs Debian's crates when missing, builds, runs `cargo test`
    (the framing against recorded bytes). Incremental: the target dir stays under build/."""
    build("rust-client")
    return BUILT


def test_agent_loop_injects_each_turn_and_seeds_once(rust_built: Path, running: Running) -> None:
    check_loop(rust_built / "agent-loop", running, "rust-loop")


def test_agent_loop_over_a_unix_socket(rust_built: Path, unix_target: str) -> None:
    for addr in (unix_target, unix_target.replace("unix://", "unix:", 1)):
        out = run(rust_built / "agent-loop", addr, "--channel", "rust-unix")
        assert out.code == 0, out.stderr
        assert out.turn_blocks()[0].startswith("[Context from memory]")


def test_agent_loop_reports_an_unreachable_sidecar(rust_built: Path) -> None:
    check_unreachable(rust_built / "agent-loop")


def test_agent_loop_rejects_an_unknown_flag(rust_built: Path) -> None:
    out = run(rust_built / "agent-loop", "127.0.0.1:1", "--chanel", "x", stdin="")
    assert out.code == 1 and "unknown argument --chanel" in out.stderr


def test_bench_reports_percentiles(rust_built: Path, running: Running) -> None:
    done = subprocess.run([str(rust_built / "bench"), "--addr", running.target, "--bench", "20"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout
    line = done.stdout.splitlines()[-1]
    assert line.startswith("bench inject n=20 ")
    stats = {k: int(v) for k, v in (part.split("=") for part in line.split()[2:])}
    assert 0 < stats["server_p50_us"] <= stats["p50_us"] <= stats["p99_us"] <= stats["max_us"]
