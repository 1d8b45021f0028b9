"""The Go agent example (clients/go) built from Debian packages, run against a real sidecar."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import Running

STORE_CHECKS = [
    "UpsertMemory creates MEMORY_TYPE_DECISION", "UpsertMemory creates MEMORY_TYPE_TODO",
    "UpsertMemory updates in place", "GetMemory returns the stored memory",
    "ListMemories filters by type", "AddEdge default weight 0.5", "RemoveEdge twice is NOT_FOUND",
    "ImportMemories stores valid items, rejects the blank one",
    "UpsertMemory blank content is INVALID_ARGUMENT naming the field",
    "GetMemory unknown id is NOT_FOUND", "ForgetMemory is a soft, idempotent delete",
]


def run(binary: Path, running: Running, *args: str) -> tuple[int, list[str]]:
    done = subprocess.run([str(binary), "-addr", running.target, *args], capture_output=True,
                          text=True, timeout=300)
    print(done.stdout, done.stderr)
    return done.returncode, done.stdout.splitlines()


def test_go_example_store_checks(go_client: Path, running: Running) -> None:
    code, lines = run(go_client, running)
    assert not [line for line in lines if line.startswith("FAIL")]
    for check in STORE_CHECKS:
        assert f"ok      {check}" in lines
    assert not [line for line in lines if line.startswith("PENDING")]
    assert lines[-1].endswith("0 failed, 0 pending")
    assert code == 0


def test_go_example_channel_turns(go_client: Path, running: Running) -> None:
    code, lines = run(go_client, running)
    assert not [line for line in lines if line.startswith("FAIL")]
    for n in (1, 2):
        assert f"ok      turn {n} Inject returns a block with the relevant memory" in lines
    assert "ok      turn 3 PruneHistory(max_keep=2) removes the 1 oldest block(s)" in lines
    assert "ok      Inject from source=system injects nothing" in lines
    assert "ok      RenderTranscript keeps every turn and leaves the blocks out" in lines
    assert "ok      ResetChannel forgets the channel state once" in lines


def test_go_example_exits_zero_when_everything_is_served(go_client: Path, running: Running) -> None:
    code, lines = run(go_client, running)
    assert code == 0, "\n".join(lines)


def test_go_bench_mode_reports_percentiles(go_client: Path, running: Running) -> None:
    code, lines = run(go_client, running, "-bench", "20")
    assert code == 0
    stats = dict(part.split("=") for part in lines[-2].split()[2:])
    assert lines[-2].startswith("bench inject n=20 ")
    assert 0 < int(stats["p50_us"]) <= int(stats["p99_us"]) <= int(stats["max_us"])


def test_go_client_reports_connection_failure(go_client: Path) -> None:
    done = subprocess.run([str(go_client), "-addr", "127.0.0.1:1", "-timeout", "1s"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout.startswith("FAIL connect 127.0.0.1:1")
