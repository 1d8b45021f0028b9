"""Building the compiled clients, running the agent-loop templates (Go, Rust, Python), and
what every template must do."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from memsidecar.v1 import store_pb2
from memsidecar_client.messages import block_header

from tests.conftest import Running

ROOT = Path(__file__).resolve().parents[2]
BLOCK_PREFIX = block_header("BLOCK_HEADER_CONTEXT")
TURNS = "Which database do we use for billing?\nWhen do we ship to Kubernetes?\n"
PYTHON_LOOP = ROOT / "clients" / "python" / "examples" / "agent_loop.py"
LANGUAGES = ("go", "python", "rust")
# language -> the fixture building its client (None: nothing to build)
BUILT = {"go": "go_built", "python": None, "rust": "rust_built"}


@dataclass(frozen=True)
class Turn:
    """What a template printed for one turn."""

    released: tuple[int, ...]  # turns whose blocks PruneHistory released
    block: str  # the block, or "(no memory block: reason)"
    reply: str


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def turns(self) -> list[Turn]:
        """Each turn after its `--- turn N` line: `released turns: ...`, the block, the
        `assistant: ...` reply."""
        out = []
        for part in self.stdout.split("--- turn ")[1:]:
            lines = part.rstrip("\n").split("\n")[1:]
            released = lines[0].removeprefix("released turns: ")
            out.append(Turn(tuple(int(t) for t in released.split(",")) if released != "-" else (),
                            "\n".join(lines[1:-1]), lines[-1]))
        return out


def build(target: str) -> None:
    """`make TARGET`; a machine that cannot build it fails here, never skips."""
    done = subprocess.run(["make", "-s", target], cwd=ROOT, capture_output=True, text=True,
                          timeout=3600)
    assert done.returncode == 0, f"make {target} failed:\n{done.stdout}\n{done.stderr}"


def loop_command(language: str, request: pytest.FixtureRequest) -> list[str]:
    """The agent-loop template of ``language``, built first when it is compiled."""
    fixture = BUILT[language]
    if fixture is None:
        return [sys.executable, str(PYTHON_LOOP)]
    folder: Path = request.getfixturevalue(fixture)
    return [str(folder / "agent-loop")]


def run(command: Path | Sequence[str], addr: str, *args: str, stdin: str = TURNS,
        cwd: Path | None = None) -> Run:
    argv = [str(command)] if isinstance(command, Path) else list(command)
    done = subprocess.run([*argv, "--addr", addr, *args], input=stdin,
                          capture_output=True, text=True, timeout=120, cwd=cwd)
    print(done.stdout, done.stderr)
    return Run(done.returncode, done.stdout, done.stderr)


def live_count(running: Running) -> int:
    reply = running.store.ListMemories(store_pb2.ListMemoriesRequest(page_size=1000,
                                                                     all_agents=True))
    return len(reply.memories)


def check_loop(command: Sequence[str], running: Running, channel: str,
               cwd: Path | None = None) -> None:
    """Two turns print blocks with the seeded memories; a second run stores nothing new and
    injects again (a new conversation on the same channel)."""
    for attempt in range(2):
        out = run(command, running.target, "--channel", channel, "--token", "t0ken", cwd=cwd)
        assert out.code == 0, out.stderr
        blocks = [turn.block for turn in out.turns()]
        assert len(blocks) == 2
        assert blocks[0].startswith(BLOCK_PREFIX) and "PostgreSQL" in blocks[0]
        assert blocks[1].startswith(BLOCK_PREFIX) and "Kubernetes" in blocks[1]
        seeded = f"seeded 6 memories: {6 if attempt == 0 else 0} stored"
        assert out.stderr.startswith(seeded), out.stderr
        if attempt == 0:
            count = live_count(running)
    assert live_count(running) == count == 6


def check_unreachable(command: Sequence[str]) -> None:
    out = run(command, "127.0.0.1:1", "--wait", "0.2", stdin="")
    assert out.code != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "127.0.0.1:1" in lines[0], out.stderr
