"""The Go selftest (clients/go/cmd/selftest): every RPC from Go against a real sidecar."""

from __future__ import annotations

from pathlib import Path

from tests.clients.agent_loops import run
from tests.conftest import Running


def test_selftest_passes_on_a_fresh_store_and_again(go_built: Path, running: Running) -> None:
    for _ in range(2):
        out = run(go_built / "selftest", running.target, stdin="")
        assert out.code == 0, out.stdout
        assert "FAIL" not in out.stdout
        assert out.stdout.splitlines()[-1].endswith(" ok, 0 failed")


def test_selftest_reports_an_unreachable_sidecar(go_built: Path) -> None:
    out = run(go_built / "selftest", "127.0.0.1:1", "--timeout", "1s", stdin="")
    assert out.code == 2 and "cannot reach the sidecar at 127.0.0.1:1" in out.stderr
