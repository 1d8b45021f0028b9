"""`memsidecar search`, `inject` and `stats` against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.cli import main
from tests.conftest import Running


def put(live: Running, content: str, agent: str = "", type_: int = m.MEMORY_TYPE_FACT) -> str:
    return str(live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=content, type=type_, agent_id=agent))).memory.id)


def run(capsys: pytest.CaptureFixture[str], live: Running, *args: str) -> tuple[int, str]:
    code = main([args[0], "--addr", live.target, *args[1:]])
    return code, capsys.readouterr().out


def test_search_shows_each_hit_with_its_source_ranks(running: Running,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    tea = put(running, "Ada drinks green tea every morning", "ada")
    put(running, "The billing service runs on port 8080")
    code, out = run(capsys, running, "search", "green tea", "--agent", "ada", "--limit", "1")
    assert code == 0
    first, why = out.splitlines()
    assert first == "1. [fact] Ada drinks green tea every morning"
    assert f"id {tea}" in why and "lexical #1" in why and "vector #1" in why
    code, out = run(capsys, running, "search", "green tea", "--mode", "lexical")
    assert code == 0 and out == "no hits\n"  # shared only: Ada's memory is not visible


UNRELATED = ["The office cat sleeps on the windowsill every afternoon.",
             "Grandma's apple pie needs two cups of flour.",
             "The hiking trail closes at sunset in winter.",
             "Bob prefers tabs over spaces in Python files.",
             "The team offsite is planned for the lake house.",
             "Ada learned to play the cello last summer."]


def test_inject_prints_the_block_and_the_turn_story(
        running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    port = put(running, "The billing service runs on port 8080", "ada", m.MEMORY_TYPE_DECISION)
    for text in UNRELATED:
        put(running, text, "ada")
    code, out = run(capsys, running, "inject", "--channel", "c1", "--agent", "ada",
                    "which port does billing use?")
    assert code == 0
    block, _, why = out.partition("\n\nturn 1: ")
    assert block.startswith("[Context from memory]") and "[Decision] The billing" in block
    assert why.startswith("1 memory injected, ") and " 1 candidates" not in why
    named = f'"The billing service runs on port 8080" ({port[:8]})'
    assert f"  injected   {named}  contextual  cosine 0." in why
    assert "ranks vector=1 lexical=1" in why
    check_counts(why)
    code, out = run(capsys, running, "inject", "--channel", "c1", "--agent", "ada",
                    "which port does billing use?")
    assert code == 0 and out.startswith("turn 2: nothing injected (")
    assert f"  held back  {named}  cooldown: still shown by turn 1  cosine 0." in out
    check_counts(out.partition("); ")[2])


COUNTS = re.compile(r"^(\d+) candidates? \((\d+) already in view, (\d+) near-duplicates?, "
                    r"(\d+) over budget\); (\d+) search hits? below the relevance floor$")


def check_counts(story: str) -> None:
    """The first line's counts agree with the lines below it: each candidate is injected or
    held back; the floor's lines and "N more of the M" add up to the M of the first line."""
    head, *lines = story.splitlines()
    found = COUNTS.search(head.partition("; ")[2] if "injected, " in head else head)
    assert found, head
    candidates, in_view, similar, budget, below = map(int, found.groups())
    kinds = [line[2:13].strip() for line in lines]
    assert kinds.count("injected") + kinds.count("held back") == candidates
    assert kinds.count("held back") == in_view + similar + budget
    floor = kinds.count("floor")
    more = [line for line in lines if "below the floor" in line]
    assert floor == min(below, 3)
    assert more == ([f"  ... {below - 3} more of the {below} below the floor"]
                    if below > 3 else [])


def test_a_closed_pipe_ends_quietly(running: Running) -> None:
    put(running, "The billing service runs on port 8080")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    done = subprocess.run(
        [sys.executable, "-m", "sidecar", "search", "billing port", "--addr", running.target],
        stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    os.close(write)
    assert done.returncode == 141 and done.stderr == ""


def test_stats_prints_plain_numbers(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    put(running, "shared fact one")
    forgotten = put(running, "Ada's private fact", "ada")
    running.store.ForgetMemory(s.ForgetMemoryRequest(id=forgotten, agent_id="ada"))
    code, out = run(capsys, running, "stats")
    lines = dict(line.split(" ", 1) for line in out.splitlines() if not line.startswith("scope"))
    assert code == 0 and lines["live"] == "1" and lines["forgotten"] == "1"
    assert int(lines["db_size_bytes"]) > 0
    assert (lines["canon"], lines["registers"], lines["register_topics"]) == ("1", "0", "0")
    assert "scope - live 1 forgotten 0 canon 1 registers 0" in out
    assert "scope ada live 0 forgotten 1 canon 0 registers 0" in out


def test_a_unix_socket_address(unix_target: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = unix_target.removeprefix("unix://")
    assert main(["stats", "--addr", f"unix:{path}"]) == 0
    assert capsys.readouterr().out.startswith("live 0\n")


def test_stats_counts_registers_beside_their_topics(
        running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    for content, topic in (("Focus: the export command", "focus"), ("Mood: upbeat", "")):
        running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=content, type=m.MEMORY_TYPE_GOAL, agent_id="ada", tier=m.TIER_REGISTER,
            topic_id=topic)))
    code, out = run(capsys, running, "stats")
    assert code == 0
    assert "\ncanon 0\nregisters 2\ncaptured 0\nregister_topics 1\n" in out  # one register
    # has no topic
    assert "scope ada live 2 forgotten 0 canon 0 registers 2" in out
    with pytest.raises(SystemExit):
        main(["stats", "--help"])
    assert "a register written without a ``topic_id`` has none" in capsys.readouterr().out
