"""One conversation, three languages: the Go, Rust and Python agent-loop templates, each
against its own fresh sidecar, print the same blocks turn by turn, and a memory comes back
once the block that carried it has left the history.

The sidecars keep 6 blocks in view (`max_injected_blocks_in_history`) while the templates
keep 3: the templates say so with PruneHistory(channel, max_keep), so what the sidecar holds
back follows what the model can still see."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.metrics.config import HttpConfig
from tests.clients.agent_loops import BLOCK_PREFIX, LANGUAGES, Turn, loop_command, run
from tests.conftest import settings_for

SCRIPT = (Path(__file__).with_name("agent_loop_script.txt")).read_text()
KEEP = 3  # the templates' max_keep
MARKER = re.compile(r"^\[memsidecar:[0-9a-f]+\]$")  # the signed marker line of a block


def memory_lines(turn: Turn) -> set[str]:
    """The memories a turn's block carries (header and marker lines left out)."""
    if not turn.block.startswith(BLOCK_PREFIX):
        return set()
    return {line for line in turn.block.split("\n")[1:]
            if not MARKER.match(line) and not (line.startswith("[") and line.endswith("]"))}


def unsigned(turns: list[Turn]) -> list[Turn]:
    return [replace(t, block="\n".join(line for line in t.block.split("\n")
                                      if not MARKER.match(line))) for t in turns]


@pytest.fixture(scope="module")
def conversations(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder,
                  request: pytest.FixtureRequest) -> dict[str, list[Turn]]:
    """The script's turns as each template printed them, each against a fresh sidecar."""
    out = {}
    for language in LANGUAGES:
        mine = ServerConfig(listen="127.0.0.1:0", http=HttpConfig(listen=""),
                            data_dir=str(tmp_path_factory.mktemp(f"conformance-{language}")))
        settings = settings_for(mine, defaults=MemoryInjectionConfig(
            max_injected_blocks_in_history=6))
        server = create_server(App.open(mine, embedder=embedder, settings=settings))
        server.start()
        try:
            done = run(loop_command(language, request), f"127.0.0.1:{server.port}",
                       "--channel", "conformance", stdin=SCRIPT)
        finally:
            server.stop(grace=1)
        assert done.code == 0, done.stderr
        out[language] = done.turns()
    return out


def test_three_languages_print_the_same_blocks(conversations: dict[str, list[Turn]]) -> None:
    python = conversations["python"]
    assert len(python) == len(SCRIPT.splitlines()) == 12
    for language in LANGUAGES:
        assert unsigned(conversations[language]) == unsigned(python), language


def test_a_memory_returns_once_its_block_left_the_history(
        conversations: dict[str, list[Turn]]) -> None:
    turns = conversations["python"]
    held: dict[int, set[str]] = {}  # turn -> the memories of its block, while in the history
    returned = []
    for number, turn in enumerate(turns, start=1):
        for released in turn.released:
            del held[released]
        assert len(held) <= KEEP - 1  # PruneHistory kept max_keep with the incoming one
        shown = set().union(*held.values()) if held else set()
        carried = memory_lines(turn)
        assert not carried & shown, f"turn {number} repeats what the history still shows"
        earlier = set().union(*(memory_lines(t) for t in turns[:number - 1]))
        returned += [(number, line) for line in carried & earlier]
        if carried:
            held[number] = carried
    assert returned, "no memory came back after its block was pruned"
