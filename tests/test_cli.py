"""The real `python -m sidecar serve` process: health, unix socket, SIGTERM, crashes mid-import and
mid-upsert."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import apsw
import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import store_pb2_grpc, vault_pb2, vault_pb2_grpc

from sidecar.config import CONFIG_FILENAME
from sidecar.store.db import Database
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent


def live_count(channel: grpc.Channel) -> int:
    return int(vault_pb2_grpc.VaultStub(channel).VaultStats(vault_pb2.VaultStatsRequest()).live)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn(listen: str, data_dir: Path, http_listen: str = "") -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sidecar", "serve", "--listen", listen, "--data-dir", str(data_dir),
         "--http-listen", http_listen],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def wait_serving(target: str, proc: subprocess.Popen[bytes]) -> grpc.Channel:
    """A channel to the process once it is SERVING, however long its start takes (a first
    start compiles the kernels); a process that exits first fails the test."""
    channel = grpc.insecure_channel(target)
    stub = health_pb2_grpc.HealthStub(channel)

    def serving() -> bool:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        try:
            return bool(stub.Check(health_pb2.HealthCheckRequest()).status == 1)
        except grpc.RpcError:  # not listening yet
            return False

    wait_for(serving)
    return channel


def start_proc(
    data_dir: Path, cleanup: list[subprocess.Popen[bytes]]
) -> tuple[subprocess.Popen[bytes], grpc.Channel]:
    """A `python -m sidecar serve` process on a free port, SERVING, and a channel to it."""
    port = free_port()
    proc = spawn(f"127.0.0.1:{port}", data_dir)
    cleanup.append(proc)
    return proc, wait_serving(f"127.0.0.1:{port}", proc)


@pytest.fixture
def proc_cleanup() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_then_sigterm_closes_cleanly(tmp_path: Path, proc_cleanup: list) -> None:
    proc, channel = start_proc(tmp_path, proc_cleanup)
    stub = store_pb2_grpc.MemoryStoreStub(channel)
    kept = m.Memory(content="kept", type=m.MEMORY_TYPE_FACT)
    stub.UpsertMemory(s.UpsertMemoryRequest(memory=kept))
    channel.close()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait() == 0
    db = tmp_path / "memsidecar.sqlite3"
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    conn = apsw.Connection(str(db))
    assert conn.execute("SELECT content FROM memories").fetchall() == [("kept",)]


def test_unix_socket(tmp_path: Path, proc_cleanup: list) -> None:
    sock = tmp_path / "side.sock"
    proc = spawn(f"unix://{sock}", tmp_path / "data")
    proc_cleanup.append(proc)
    channel = wait_serving(f"unix://{sock}", proc)
    stub = store_pb2_grpc.MemoryStoreStub(channel)
    reply = stub.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(content="u", type=1)))
    assert reply.created
    channel.close()
    proc.send_signal(signal.SIGINT)
    assert proc.wait() == 0


def test_port_in_use_is_a_clear_error_and_touches_no_data_dir(tmp_path: Path) -> None:
    """The busy port is found before the store opens: the data dir is not created (nor
    migrated), and the one line is ours alone (no line of gRPC's C core before it)."""
    data = tmp_path / "data"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = spawn(f"127.0.0.1:{port}", data)
        out, _ = proc.communicate()
    text = out.decode()
    assert proc.returncode == 2, text
    refusal = [line for line in text.splitlines() if line.startswith("memsidecar serve:")]
    assert len(refusal) == 1 and f"127.0.0.1:{port}" in refusal[0], text
    assert "add_port" not in text and "Traceback" not in text, text
    assert not data.exists(), sorted(p.name for p in data.rglob("*"))


def test_kill_mid_import_leaves_only_whole_batches(tmp_path: Path, proc_cleanup: list) -> None:
    proc, channel = start_proc(tmp_path, proc_cleanup)
    stub = store_pb2_grpc.MemoryStoreStub(channel)

    def items() -> Iterator[s.UpsertMemoryRequest]:
        for i in range(100_000):
            if i == 1500:  # kill once at least one batch of 256 has committed
                wait_for(lambda: live_count(channel) >= 256)
                proc.kill()
            yield s.UpsertMemoryRequest(memory=m.Memory(content=f"memory {i}", type=7))

    with pytest.raises(grpc.RpcError):
        stub.ImportMemories(items())
    proc.wait()
    conn = apsw.Connection(str(tmp_path / "memsidecar.sqlite3"))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    count, bad = conn.execute(
        "SELECT count(*), sum(length(embedding) != 384 * 4 OR content = '') FROM memories"
    ).fetchone()
    assert count > 0 and count % 256 == 0 and not bad


def test_kill_during_upsert_bursts_keeps_every_acknowledged_write(
        tmp_path: Path, proc_cleanup: list) -> None:
    """kill -9 while four threads upsert; after a restart every acknowledged write is there,
    the database is intact and search finds them."""
    proc, channel = start_proc(tmp_path, proc_cleanup)
    stub = store_pb2_grpc.MemoryStoreStub(channel)
    acked: list[tuple[str, str]] = []
    lock = threading.Lock()

    def writer(worker: int) -> None:
        for i in range(10_000):
            text = f"burst note {worker}-{i} about the zebra{worker}x{i} deployment"
            try:
                reply = stub.UpsertMemory(s.UpsertMemoryRequest(
                    memory=m.Memory(content=text, type=m.MEMORY_TYPE_FACT)))
            except grpc.RpcError:
                return  # the server is gone
            with lock:  # a near-duplicate is acknowledged with the id it resolved to
                acked.append((reply.memory.id, reply.memory.content))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(acked) >= 60 or proc.poll() is not None)
    assert proc.poll() is None
    proc.kill()
    proc.wait()
    for thread in threads:
        thread.join()
    channel.close()
    conn = apsw.Connection(str(tmp_path / "memsidecar.sqlite3"))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    _, channel = start_proc(tmp_path, proc_cleanup)
    stub = store_pb2_grpc.MemoryStoreStub(channel)
    for memory_id, text in acked:
        assert stub.GetMemory(s.GetMemoryRequest(id=memory_id)).content == text
    for memory_id, text in acked[:: max(1, len(acked) // 10)]:
        hits = stub.Search(s.SearchRequest(query=text.split()[5], limit=5)).hits
        assert memory_id in [hit.memory.id for hit in hits]
    channel.close()


def test_sigterm_lets_in_flight_import_finish(tmp_path: Path, proc_cleanup: list) -> None:
    """The grace period is the longest allowed, so that the import finishes within it
    however loaded the machine is."""
    (tmp_path / CONFIG_FILENAME).write_text("[server]\nshutdown_grace_s = 3600\n")
    proc, channel = start_proc(tmp_path, proc_cleanup)
    stub = store_pb2_grpc.MemoryStoreStub(channel)

    def items() -> Iterator[s.UpsertMemoryRequest]:
        for i in range(120):
            if i == 20:
                proc.send_signal(signal.SIGTERM)  # the stream is in flight
            yield s.UpsertMemoryRequest(memory=m.Memory(
                content=f"in-flight memory {i} about topic {i * 7}", type=7))

    summary = stub.ImportMemories(items())
    assert (summary.stored, summary.rejected) == (120, 0)
    assert proc.wait() == 0
    conn = apsw.Connection(str(tmp_path / "memsidecar.sqlite3"))
    assert conn.execute("SELECT count(*) FROM memories").fetchone() == (120,)


def test_one_server_per_data_dir_and_owner_only_files(tmp_path: Path, proc_cleanup: list) -> None:
    data, sock = tmp_path / "data", tmp_path / "side.sock"
    proc = subprocess.Popen(  # umask 0: every mode below is the server's own doing
        [sys.executable, "-m", "sidecar", "serve", "--listen", f"unix://{sock}",
         "--data-dir", str(data), "--http-listen", ""],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        preexec_fn=lambda: os.umask(0))
    proc_cleanup.append(proc)
    channel = wait_serving(f"unix://{sock}", proc)
    store_pb2_grpc.MemoryStoreStub(channel).UpsertMemory(
        s.UpsertMemoryRequest(memory=m.Memory(content="locked in", type=1)))
    second = spawn(f"127.0.0.1:{free_port()}", data)
    out, _ = second.communicate()
    assert second.returncode == 2 and f"pid {proc.pid}" in out.decode()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    files = [p for p in data.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"memsidecar.sqlite3", "memsidecar.sqlite3-wal",
                                       "memsidecar.lock"}
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {
        p.name: 0o600 for p in files}
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    channel.close()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait() == 0
    assert {stat.S_IMODE(p.stat().st_mode) for p in data.rglob("*") if p.is_file()} == {0o600}


def test_a_busy_http_port_exits_2_with_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = f"127.0.0.1:{taken.getsockname()[1]}"
        proc = spawn(f"127.0.0.1:{free_port()}", data, http_listen=busy)
        out, _ = proc.communicate(timeout=120)
    refusal = [line for line in out.decode().splitlines() if line.startswith("memsidecar serve:")]
    assert proc.returncode == 2 and len(refusal) == 1
    assert busy in refusal[0] and "--http-listen" in refusal[0]
    assert "Traceback" not in out.decode()
    assert not data.exists()  # refused before the store opened


def test_remote_listen_without_auth_exits_2(tmp_path: Path) -> None:
    proc = spawn(f"0.0.0.0:{free_port()}", tmp_path)
    out, _ = proc.communicate()
    assert proc.returncode == 2 and "allow_insecure_remote" in out.decode()


def test_token_add_prints_the_token_alone_on_its_last_line(tmp_path: Path) -> None:
    def run(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "sidecar", "token", *args,
                               "--data-dir", str(tmp_path)], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout

    token = run("add", "--agent", "alice").splitlines()[-1]
    assert token.startswith("msk_") and " " not in token
    run("add", "--operator")
    listed = run("list")
    assert "alice" in listed and "operator" in listed and token not in listed
    assert token not in (tmp_path / "tokens.json").read_text()
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    run("revoke", token.split("_")[1])
    assert "alice" not in run("list")


@pytest.mark.parametrize("damage", ["header", "truncated"])
def test_a_corrupt_database_exits_2_with_one_line(tmp_path: Path, damage: str) -> None:
    db_path = tmp_path / "memsidecar.sqlite3"
    Database(db_path).close()  # a real store: the schema's tables and indexes
    size = db_path.stat().st_size
    with db_path.open("r+b") as f:
        if damage == "header":
            f.write(b"not a database at all" * 5)
        else:
            f.truncate(size // 2)
    proc = spawn(f"127.0.0.1:{free_port()}", tmp_path)
    out, _ = proc.communicate(timeout=60)
    text = out.decode()
    assert proc.returncode == 2, text
    assert "Traceback" not in text
    (line,) = [x for x in text.splitlines() if str(db_path) in x]
    assert line.startswith("memsidecar serve: ") and "Restore the data dir" in line
