"""Building the compiled clients, and what every agent-loop template (Go, Rust) must do."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from memsidecar.v1 import store_pb2
from memsidecar_client.messages import block_header

from tests.conftest import Running

ROOT = Path(__file__).resolve().parents[2]
BLOCK_PREFIX = block_header("BLOCK_HEADER_CONTEXT")
TURNS = "Which database do we use for billing?\nWhen do we ship to Kubernetes?\n"


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def turn_blocks(self) -> list[str]:
        """The text printed for each turn (after its `--- turn N` line)."""
        return [part.split("\n", 1)[1] for part in self.stdout.split("--- turn ")[1:]]


def build(target: str) -> None:
    """`make TARGET`; a machine that cannot build it fails here, never skips."""
    done = subprocess.run(["make", "-s", target], cwd=ROOT, capture_output=True, text=True,
                          timeout=3600)
    assert done.returncode == 0, f"make {target} failed:\n{done.stdout}\n{done.stderr}"


def run(binary: Path, addr: str, *args: str, stdin: str = TURNS) -> Run:
    done = subprocess.run([str(binary), "--addr", addr, *args], input=stdin,
                          capture_output=True, text=True, timeout=120)
    print(done.stdout, done.stderr)
    return Run(done.returncode, done.stdout, done.stderr)


def live_count(running: Running) -> int:
    reply = running.store.ListMemories(store_pb2.ListMemoriesRequest(page_size=1000))
    return len(reply.memories)


def check_loop(binary: Path, running: Running, channel: str) -> None:
    """Two turns print blocks with the seeded memories; a second run stores nothing new and
    injects again (a new conversation on the same channel)."""
    for attempt in range(2):
        out = run(binary, running.target, "--channel", channel, "--token", "t0ken")
        assert out.code == 0, out.stderr
        blocks = out.turn_blocks()
        assert len(blocks) == 2
        assert blocks[0].startswith(BLOCK_PREFIX) and "PostgreSQL" in blocks[0]
        assert blocks[1].startswith(BLOCK_PREFIX) and "Kubernetes" in blocks[1]
        if attempt == 0:
            seeded = live_count(running)
    assert live_count(running) == seeded


def check_unreachable(binary: Path) -> None:
    out = run(binary, "127.0.0.1:1", stdin="")
    assert out.code != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "127.0.0.1:1" in lines[0]
