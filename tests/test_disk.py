"""The record of refused writes (one log line per reason a minute, counts, state, listeners),
the errno classification, and the stale temp files a crash leaves, removed at start."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import grpc
import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.api.status import code_for
from sidecar.app import App
from sidecar.disk import DiskFaults, full, not_writable, refusal
from sidecar.embedding import Embedder
from sidecar.errors import DiskFull, NotWritable, StorageFault
from sidecar.files import write_atomic


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_codes_and_reasons() -> None:
    assert code_for(full("/d/x")) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert code_for(not_writable("/d/x", "read-only")) == grpc.StatusCode.FAILED_PRECONDITION
    assert full("/d/x").reason == "DISK_FULL" and "/d/x" in full("/d/x").message
    assert not_writable("/d/x", "why").reason == "NOT_WRITABLE"


@pytest.mark.parametrize(("code", "kind"), [
    (errno.ENOSPC, DiskFull), (errno.EDQUOT, DiskFull), (errno.EROFS, NotWritable),
    (errno.EACCES, NotWritable), (errno.EPERM, NotWritable), (errno.EIO, None),
    (None, None)])
def test_refusal_by_errno(code: int | None, kind: type[StorageFault] | None) -> None:
    fault = refusal(code, "/data/memsidecar.toml")
    assert (type(fault) if fault is not None else None) is kind
    if fault is not None:
        assert fault.path == "/data/memsidecar.toml" in fault.message


def test_one_line_a_minute_per_reason_with_the_count(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    faults = DiskFaults(clock)
    heard: list[str] = []
    faults.on_refusal.append(heard.append)
    caplog.set_level(logging.INFO, logger="sidecar.disk")
    for _ in range(5):
        faults.refused(full("/d/db"))
    faults.refused(not_writable("/d/db", "read-only"))
    clock.now += 59
    faults.refused(full("/d/db"))
    clock.now += 1
    faults.refused(full("/d/db"))
    lines = [(r.__dict__["reason"], r.__dict__["refused"]) for r in caplog.records]
    assert lines == [("DISK_FULL", 1), ("NOT_WRITABLE", 1), ("DISK_FULL", 6)]
    assert not any(r.exc_info for r in caplog.records)
    assert faults.counts == {"DISK_FULL": 7, "NOT_WRITABLE": 1}
    assert heard.count("DISK_FULL") == 7


def test_state_listeners_and_recovery(caplog: pytest.LogCaptureFixture) -> None:
    faults = DiskFaults(Clock())
    states: list[str | None] = []
    faults.listeners.append(lambda f: states.append(None if f is None else f.reason))
    faults.accepted()  # nothing refused: nothing heard
    faults.refused(full("/d/db"))
    faults.refused(full("/d/db"))  # the same state: heard once
    faults.refused(not_writable("/d/db", "read-only"))
    caplog.set_level(logging.INFO, logger="sidecar.disk")
    caplog.clear()
    faults.accepted()
    assert states == ["DISK_FULL", "NOT_WRITABLE", None]
    assert faults.current is None
    assert [r.getMessage() for r in caplog.records] == ["writes accepted again"]


def test_probe_clears_the_state_only_when_it_writes() -> None:
    faults = DiskFaults(Clock())
    faults.refused(full("/d/db"), counted=False)  # a start on a full disk: not counted
    assert faults.counts["DISK_FULL"] == 0 and faults.current is not None

    def refusing() -> None:
        raise full("/d/db")
    faults.probe = refusing
    assert not faults.try_probe() and faults.current is not None
    faults.probe = lambda: None
    assert faults.try_probe() and faults.current is None


def test_stale_temp_files_removed_at_start(config: ServerConfig, embedder: Embedder) -> None:
    data = Path(config.data_dir)
    data.mkdir(parents=True)
    write_atomic(data / "memsidecar.toml", "[vault]\nmax_chars = 4000\n")
    stale = [".memsidecar.toml.k2_9xqzA.tmp", ".tokens.json.a1b2c3d4.tmp", "lexical.npz.tmp.npz",
             "lexical.npz.json.tmp", "vectors.hnsw.tmp", "vectors.hnsw.json.tmp"]
    kept = ["notes.tmp", ".memsidecar.toml.tmp", ".other.toml.k2_9xqzA.tmp",
            ".memsidecar.toml.k2_9xqzA.tmp.bak", "lexical.npz.tmp"]
    for name in stale + kept:
        (data / name).write_text("left by a crash")
    os.mkdir(data / ".memsidecar.toml.dir12345.tmp")  # not a file: left alone
    elsewhere = data.parent / ".memsidecar.toml.k2_9xqzA.tmp"  # not in the data dir
    elsewhere.write_text("someone else's")
    os.symlink(elsewhere, data / ".memsidecar.toml.link1234.tmp")
    app = App.open(config, embedder=embedder)
    app.close()
    names = {p.name for p in data.iterdir()}
    assert not names & set(stale)
    assert set(kept) | {".memsidecar.toml.dir12345.tmp", ".memsidecar.toml.link1234.tmp"} <= names
    assert elsewhere.read_text() == "someone else's"
    assert (data / "memsidecar.toml").read_text() == "[vault]\nmax_chars = 4000\n"
