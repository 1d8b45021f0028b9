"""`memsidecar import` / `export` against real servers: a round trip into a fresh data dir
reproduces every field (from a SQLite or a PostgreSQL store), exit codes, the summary, resuming
after the sidecar restarts, and the operator token for an export of every agent."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.cli import main
from sidecar.embedding import Embedder
from tests.api.test_auth import Authed
from tests.conftest import Running, start_server
from tests.waiting import wait_for

RECORDS: list[dict[str, object]] = [
    {"id": "m-ada-1", "content": "Ada deploys the billing service on Fridays", "type": "decision",
     "agent_id": "ada", "channel_id": "ops", "source": "chat", "importance": 0.95},
    {"content": "The staging database runs PostgreSQL 16", "type": "FACT"},
    {"content": "Bob prefers short answers with Go examples", "type": "MEMORY_TYPE_PREFERENCE",
     "agent_id": "bob", "user_id": "bob-customer-7"},
    {"content": "Current sprint goal: ship the export command", "type": "goal",
     "tier": "register", "topic_id": "sprint", "agent_id": "ada"},
    {"content": "The office cat is called Pixel", "type": "observation", "id": "m-cat"},
]
FIELDS = ("id", "content", "type", "importance", "tier", "agent_id", "channel_id", "source",
          "topic_id", "version", "created_at", "updated_at", "forgotten", "user_id",
          "channel_private")


def cli(capsys: pytest.CaptureFixture[str], live: Running, *args: str) -> tuple[int, str, str]:
    code = main([args[0], "--addr", live.target, "--no-progress", *args[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, lines: list[object]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def stored(live: Running) -> list[tuple[object, ...]]:
    memories = live.store.ListMemories(s.ListMemoriesRequest(
        all_agents=True, include_forgotten=True, sort=s.SORT_ORDER_STORED, page_size=1000))
    return [tuple(getattr(mem, f) for f in FIELDS) for mem in memories.memories]


def test_export_then_import_into_a_fresh_store_reproduces_every_field(
        running_on_each: Running, config: ServerConfig, embedder: Embedder, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    running = running_on_each
    assert cli(capsys, running, "import", str(write(tmp_path / "in.jsonl", RECORDS)))[0] == 0
    running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        id="m-ada-1", content="Ada deploys the billing service on Thursdays",
        type=m.MEMORY_TYPE_DECISION, agent_id="ada", importance=0.95)))  # version 2
    running.store.ForgetMemory(s.ForgetMemoryRequest(id="m-cat"))  # version 2, forgotten
    code, exported, err = cli(capsys, running, "export")
    assert code == 0 and "5 memories exported (1 forgotten)" in err
    lines = [json.loads(line) for line in exported.splitlines()]
    assert [line["id"] for line in lines[:1]] == ["m-ada-1"] and len(lines) == 5
    assert lines[0]["type"] == "decision" and lines[0]["version"] == 2
    assert lines[0]["importance"] == 0.95 and lines[3]["tier"] == "register"
    assert (lines[2]["user_id"], lines[0]["user_id"]) == ("bob-customer-7", "")
    assert set(lines[0]) == set(FIELDS)
    dump = tmp_path / "export.jsonl"
    dump.write_text(exported)

    fresh = start_server(replace(config, data_dir=str(tmp_path / "fresh")), embedder)
    try:
        code, _, err = cli(capsys, fresh, "import", str(dump))
        assert code == 0 and "5 lines: 5 stored, 0 deduplicated, 0 rejected" in err
        assert stored(fresh) == stored(running)
        assert cli(capsys, fresh, "export")[1] == exported
        code, _, err = cli(capsys, fresh, "import", str(dump))  # again: nothing twice
        assert code == 0 and "5 lines: 0 stored, 5 deduplicated, 0 rejected" in err
        assert stored(fresh) == stored(running)
    finally:
        fresh.close()


def test_the_summary_names_each_rejected_line_and_the_exit_status_is_1(
        running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "mixed.jsonl", [
        RECORDS[1], "", "{not json", {"content": "   ", "type": "fact"},
        {"content": "journal tick", "type": "event", "tier": "log"}, RECORDS[2],
        {"content": "x", "type": "colour"}])
    code, _, err = cli(capsys, running, "import", str(path), "--batch-size", "2")
    assert code == 1
    assert "6 lines: 2 stored, 0 deduplicated, 4 rejected" in err
    reasons = {line.split(":")[0].strip(): line for line in err.splitlines() if "line " in line}
    assert set(reasons) == {"line 3", "line 4", "line 5", "line 7"}
    assert "EMPTY_CONTENT" in reasons["line 4"] and "LOG_TIER" in reasons["line 5"]
    assert "BAD_LINE" in reasons["line 3"] and "colour" in reasons["line 7"]


def test_standard_input_and_usage_errors(
        running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", open(write(tmp_path / "one.jsonl", RECORDS[:1])))
    assert cli(capsys, running, "import", "-")[0] == 0
    assert cli(capsys, running, "import", str(tmp_path / "missing.jsonl"))[0] == 2
    with pytest.raises(SystemExit) as exited:  # argparse: the usage line
        cli(capsys, running, "import", "-", "--batch-size", "101")
    assert exited.value.code == 2
    assert "argument --batch-size: 101 is not in 1..100" in capsys.readouterr().err


def test_an_unreachable_sidecar_is_exit_status_2(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", RECORDS)
    for args in (["import", str(path)], ["export"]):
        done = subprocess.run(
            [sys.executable, "-m", "sidecar", *args, "--addr", "127.0.0.1:1", "--timeout", "1"],
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert "UNAVAILABLE" in done.stderr


def test_an_import_resumes_when_the_sidecar_restarts(
        config: ServerConfig, embedder: Embedder, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_cli import free_port

    port = free_port()
    at = replace(config, listen=f"127.0.0.1:{port}")
    records = [{"content": f"Line {i}: the nightly job {i} writes report {i * 7}",
                "type": "event"} for i in range(2000)]  # more than a stop's grace second stores
    path = write(tmp_path / "many.jsonl", records)
    first = start_at(at, embedder)
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(main(
        ["import", str(path), "--addr", f"127.0.0.1:{port}", "--no-progress"])))
    worker.start()
    wait_for(lambda: first.server.app.memories.memories.count() >= 100)
    first.close()  # the break: the stream fails with UNAVAILABLE
    second = start_at(at, embedder)
    try:
        worker.join()
        assert result == [0], capsys.readouterr().err
        assert "2000 lines:" in capsys.readouterr().err
        assert second.server.app.memories.memories.count() == 2000
        resumed = second.server.app.metrics.registry.get_sample_value(
            "memsidecar_rpc_duration_seconds_count",
            {"method": "ImportMemoriesStream", "code": "OK"})
        assert resumed == 1  # the rest went to the restarted sidecar
        assert {row[9] for row in stored(second)} == {1}  # every line stored once
    finally:
        second.close()


def start_at(config: ServerConfig, embedder: Embedder) -> Running:
    from sidecar.api.server import create_server
    from sidecar.app import App

    server = create_server(App.open(config, embedder=embedder))
    server.start()
    return Running(server)


def test_exporting_every_agent_needs_the_operator_token(
        authed: Authed, capsys: pytest.CaptureFixture[str]) -> None:
    live = authed.live
    ada = s.ImportItem(memory=m.Memory(content="Alice drinks green tea", agent_id="alice",
                                      type=m.MEMORY_TYPE_FACT, id="a1"))
    bob = s.ImportItem(memory=m.Memory(content="Bob drinks coffee", agent_id="bob",
                                      type=m.MEMORY_TYPE_FACT, id="b1"))
    (ack,) = live.store.ImportMemoriesStream(iter([s.ImportBatch(items=[ada, bob])]),
                                             metadata=authed.as_("alice"))
    assert list(ack.ids) == ["a1"] and [e.code for e in ack.errors] == ["PERMISSION_DENIED"]
    code, _, err = cli(capsys, live, "export", "--token", authed.tokens["alice"])
    assert code == 2 and "operator token" in err
    code, out, _ = cli(capsys, live, "export", "--token", authed.tokens["alice"],
                       "--agent", "alice")
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines()] == ["a1"]
    code, out, _ = cli(capsys, live, "export", "--token", authed.tokens["op"])
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines()] == ["a1"]


def stderr_of(argv: list[str], tty: bool) -> str:
    """What ``memsidecar ARGV`` wrote on stderr: a pipe, or a terminal (a pty) when ``tty``."""
    command = [sys.executable, "-m", "sidecar", *argv]
    if not tty:
        return subprocess.run(command, capture_output=True, text=True, timeout=120,
                              check=True).stderr
    main_fd, term = pty.openpty()
    fcntl.ioctl(term, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # rows, columns
    try:
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=term, timeout=120, check=True)
        os.close(term)
        chunks = []
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode()
    finally:
        os.close(main_fd)


def test_progress_bars_only_on_a_terminal(running: Running, tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", RECORDS)
    addr = ["--addr", running.target]
    assert stderr_of(["import", str(path), *addr], tty=False) == (
        "5 lines: 5 stored, 0 deduplicated, 0 rejected\n")
    assert stderr_of(["export", *addr], tty=False) == "5 memories exported (0 forgotten)\n"
    for argv in (["import", str(path), *addr], ["export", *addr]):
        drawn = stderr_of(argv, tty=True)
        assert "100%" in drawn and "mem/s" in drawn, drawn
        plain = stderr_of([*argv, "--no-progress"], tty=True)
        assert "100%" not in plain and "\r" not in plain.replace("\r\n", "\n"), plain


def test_one_line_and_one_memory_are_counted_in_the_singular(
        running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = write(tmp_path / "one.jsonl", [RECORDS[1]])
    code, _, err = cli(capsys, running, "import", str(dump))
    assert (code, err) == (0, "1 line: 1 stored, 0 deduplicated, 0 rejected\n")
    code, _, err = cli(capsys, running, "export")
    assert (code, err) == (0, "1 memory exported (0 forgotten)\n")
