"""The Go module (clients/go) built offline from Debian packages, run against a real sidecar."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clients.agent_loops import ROOT, build, check_loop, check_unreachable, run
from tests.conftest import Running

BUILT = ROOT / "build" / "go"


@pytest.fixture(scope="session")
def go_built() -> Path:
    """`make go-client`: installs Debian's Go packages when missing, checks the committed
    generated code against proto/, vets and tests the module, builds the binaries."""
    build("go-client")
    return BUILT


def test_selftest_passes_on_a_fresh_store_and_again(go_built: Path, running: Running) -> None:
    for _ in range(2):
        out = run(go_built / "selftest", running.target, stdin="")
        assert out.code == 0, out.stdout
        assert "FAIL" not in out.stdout
        assert out.stdout.splitlines()[-1].endswith(" ok, 0 failed")


def test_selftest_reports_an_unreachable_sidecar(go_built: Path) -> None:
    out = run(go_built / "selftest", "127.0.0.1:1", "--timeout", "1s", stdin="")
    assert out.code == 2 and "cannot reach the sidecar at 127.0.0.1:1" in out.stderr


def test_agent_loop_injects_each_turn_and_seeds_once(go_built: Path, running: Running) -> None:
    check_loop(go_built / "agent-loop", running, "go-loop")


def test_agent_loop_over_a_unix_socket(go_built: Path, unix_target: str) -> None:
    for addr in (unix_target, unix_target.replace("unix://", "unix:", 1)):
        out = run(go_built / "agent-loop", addr, "--channel", "go-unix")
        assert out.code == 0, out.stderr
        assert out.turn_blocks()[0].startswith("[Context from memory]")


def test_agent_loop_reports_an_unreachable_sidecar(go_built: Path) -> None:
    check_unreachable(go_built / "agent-loop")


def test_bench_mode_reports_percentiles(go_built: Path, running: Running) -> None:
    done = subprocess.run([str(ROOT / "build" / "go-client"), "-addr", running.target,
                           "-bench", "20"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout
    line = done.stdout.splitlines()[-1]
    assert line.startswith("bench inject n=20 ")
    stats = {k: int(v) for k, v in (part.split("=") for part in line.split()[2:])}
    assert 0 < stats["p50_us"] <= stats["p99_us"] <= stats["max_us"]
    assert 0 < stats["server_p50_us"] <= stats["max_us"]
