"""The CLI and end users against a real server: `--user` on search, inject, captured and export;
`captured --forget` erases for good; `forget-user` erases a user and prints the counts only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.cli import main
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from tests.conftest import Running, settings_for, start_server

AGENT = "support"
DOG = "My dog is called Giruruka and she loves the beach."
ASK = "What is my dog called?"


@pytest.fixture
def capturing(config: ServerConfig, embedder: Embedder) -> Iterator[Running]:
    """A server capturing the user turns (`capture = "user"`)."""
    live = start_server(config, embedder, settings_for(
        config, defaults=MemoryInjectionConfig(capture="user")))
    yield live
    live.close()


def cli(capsys: pytest.CaptureFixture[str], live: Running, *args: str) -> tuple[int, str, str]:
    code = main([args[0], "--addr", live.target, *args[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def put(live: Running, content: str, user: str = "") -> str:
    return str(live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=content, type=m.MEMORY_TYPE_FACT, agent_id=AGENT, user_id=user))).memory.id)


def ids(live: Running) -> set[str]:
    reply = live.store.ListMemories(s.ListMemoriesRequest(agent_id=AGENT, include_forgotten=True,
                                                          page_size=1000))
    return {x.id for x in reply.memories}


def test_search_and_inject_as_a_user(running: Running,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    dog = put(running, DOG, "alice")
    code, out, _ = cli(capsys, running, "search", ASK, "--agent", AGENT, "--user", "alice")
    assert code == 0 and out.startswith(f"1. [fact] {DOG}\n   id {dog}")
    assert cli(capsys, running, "search", ASK, "--agent", AGENT, "--user", "bob")[1] == "no hits\n"
    code, out, _ = cli(capsys, running, "inject", "--channel", "a1", "--agent", AGENT,
                       "--user", "alice", ASK)
    assert code == 0 and "Giruruka" in out.partition("\n\nturn 1: ")[0]
    code, out, _ = cli(capsys, running, "inject", "--channel", "b1", "--agent", AGENT,
                       "--user", "bob", ASK)
    assert code == 0 and "Giruruka" not in out


def test_export_of_one_user_holds_theirs_with_the_user(
        running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    dog = put(running, DOG, "alice")
    put(running, "Bob's cat is called Miso.", "bob")
    put(running, "The beach office opens at nine.")
    code, out, err = cli(capsys, running, "export", "--agent", AGENT, "--user", "alice",
                         "--no-progress")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and "1 memory exported" in err
    assert [(x["id"], x["user_id"], x["content"]) for x in lines] == [(dog, "alice", DOG)]


def test_a_channel_private_capture_stays_private_through_export_and_import(
        capturing: Running, config: ServerConfig, embedder: Embedder, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A turn captured without a user is private to its channel; its exported line says so
    and importing it restores it so (never as the agent's general knowledge)."""
    capturing.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id="c1", text=DOG))
    capturing.server.app.injector.capture.drain.flush()  # type: ignore[union-attr]
    code, out, _ = cli(capsys, capturing, "export", "--agent", AGENT, "--no-progress")
    [line] = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and (line["channel_private"], line["user_id"]) == (True, "")
    (tmp_path / "dump.jsonl").write_text(out)
    fresh = start_server(replace(config, data_dir=str(tmp_path / "fresh")), embedder)
    try:
        assert cli(capsys, fresh, "import", str(tmp_path / "dump.jsonl"), "--no-progress")[0] == 0
        restored = fresh.store.GetMemory(s.GetMemoryRequest(id=line["id"], agent_id=AGENT))
        assert restored.channel_private and restored.channel_id == "c1"
    finally:
        fresh.close()


def test_captured_by_user_and_forget_erases_them(
        capturing: Running, capsys: pytest.CaptureFixture[str]) -> None:
    for user, text in (("alice", DOG), ("bob", "I moved to Lisbon in May with my family.")):
        capturing.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id=f"{user}-1",
                                                     user_id=user, text=text))
    capturing.server.app.injector.capture.drain.flush()  # type: ignore[union-attr]
    code, out, _ = cli(capsys, capturing, "captured", "--agent", AGENT, "--user", "alice")
    [line] = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and (line["user_id"], line["content"]) == ("alice", DOG)
    before = ids(capturing)
    code, out, err = cli(capsys, capturing, "captured", "--agent", AGENT, "--user", "alice",
                         "--forget")
    assert code == 0 and out == "" and "1 captured memory erased" in err
    assert ids(capturing) == before - {line["id"]}  # gone, not kept as forgotten


def test_forget_user_prints_the_counts_and_no_text(
        running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    put(running, DOG, "alice")
    put(running, "I moved to Lisbon in May.", "alice")
    kept = put(running, "Bob's cat is called Miso.", "bob")
    running.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id="a1", user_id="alice",
                                               text=ASK))
    code, out, err = cli(capsys, running, "forget-user", "--agent", AGENT, "--user", "alice")
    assert code == 0 and err == ""
    assert out.startswith(f"user alice of agent {AGENT} erased: 2 memories, ")
    assert out.endswith(", 1 channel\n") and "Giruruka" not in out and "dog" not in out
    assert ids(running) == {kept}
    code, out, _ = cli(capsys, running, "forget-user", "--agent", AGENT, "--user", "alice")
    assert code == 0 and out == f"user alice of agent {AGENT}: nothing to erase\n"


def test_forget_user_needs_both_ids_and_refuses_a_bad_one(
        running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["forget-user", "--addr", running.target, "--agent", AGENT])
    assert exited.value.code == 2 and "--user" in capsys.readouterr().err
    code, out, err = cli(capsys, running, "forget-user", "--agent", AGENT, "--user", "a\x07b")
    assert code == 2 and out == "" and "\x07" not in err


def test_captures_of_calls_without_an_agent_are_listed_and_erased(
        capturing: Running, capsys: pytest.CaptureFixture[str]) -> None:
    """A sidecar called without agent ids keeps its captures in the shared scope: `captured`
    lists them (with every agent's, or alone with `--agent ''`), `forget-user --agent ''`
    erases their user."""
    capturing.injection.Inject(inj.InjectRequest(channel_id="k1", user_id="kim", text=DOG))
    capturing.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id="a1",
                                                 user_id="kim", text=ASK))
    capturing.server.app.injector.capture.drain.flush()  # type: ignore[union-attr]
    code, out, _ = cli(capsys, capturing, "captured", "--user", "kim")
    assert code == 0 and sorted(json.loads(x)["agent_id"] for x in out.splitlines()) == [
        "", AGENT]
    code, out, _ = cli(capsys, capturing, "captured", "--agent", "", "--user", "kim")
    [line] = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and (line["agent_id"], line["content"]) == ("", DOG)
    code, out, _ = cli(capsys, capturing, "forget-user", "--agent", "", "--user", "kim")
    assert code == 0 and out.startswith("user kim of the calls without an agent erased: 1 ")
    code, out, _ = cli(capsys, capturing, "captured", "--user", "kim")
    assert [json.loads(x)["content"] for x in out.splitlines()] == [ASK]
