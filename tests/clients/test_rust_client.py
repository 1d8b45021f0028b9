"""The Rust crate's binaries: the agent loop's command line, and the selftest (every call of
the client) against a sidecar that starts after it (its behaviour in the loop:
test_compiled_clients.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from tests.api.test_tls import Pki
from tests.clients.agent_loops import run
from tests.clients.test_python_client import free_port


def test_agent_loop_rejects_an_unknown_flag(rust_built: Path) -> None:
    out = run(rust_built / "agent-loop", "127.0.0.1:1", "--chanel", "x", stdin="")
    assert out.code == 1 and "unknown argument --chanel" in out.stderr


@pytest.mark.parametrize("binary", ["agent-loop", "bench", "selftest", "quickstart"])
def test_every_binary_answers_help(rust_built: Path, binary: str) -> None:
    done = subprocess.run([str(rust_built / binary), "--help"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0 and done.stdout.startswith(binary), done.stderr


def test_selftest_waits_for_the_sidecar_then_passes(rust_built: Path, config: ServerConfig,
                                                    embedder: Embedder) -> None:
    port = free_port()
    with subprocess.Popen([str(rust_built / "selftest"), "--addr", f"127.0.0.1:{port}",
                           "--wait", "120"], stdout=subprocess.PIPE, text=True) as selftest:
        assert selftest.stdout is not None
        assert selftest.stdout.readline().startswith("waiting for the sidecar")
        server = create_server(App.open(replace(config, listen=f"127.0.0.1:{port}"),
                                        embedder=embedder))
        server.start()
        try:
            out, _ = selftest.communicate(timeout=120)
        finally:
            server.stop(grace=1)
    assert selftest.returncode == 0, out
    assert "FAIL" not in out and out.splitlines()[-1].endswith(" ok, 0 failed")


def test_selftest_reports_an_unreachable_sidecar(rust_built: Path) -> None:
    out = run(rust_built / "selftest", "127.0.0.1:1", "--wait", "0.2", stdin="")
    assert out.code == 2 and "cannot reach the sidecar at 127.0.0.1:1" in out.stderr


@pytest.fixture
def mutual_tls(config: ServerConfig, embedder: Embedder, tmp_path: Path) -> Iterator[Path]:
    """A folder with ca.pem, client.pem and client.key; a sidecar on localhost:PORT that
    requires a client certificate signed by that CA (the port in the file `port`)."""
    pki = Pki(tmp_path)
    (tmp_path / "client.pem").write_bytes(pki.client_cert)
    (tmp_path / "client.key").write_bytes(pki.client_key)
    server = create_server(App.open(replace(config, listen="localhost:0",
                                            tls=pki.tls(mutual=True)), embedder=embedder))
    server.start()
    (tmp_path / "port").write_text(str(server.port))
    yield tmp_path
    server.stop(grace=1)


def test_selftest_over_mutual_tls(rust_built: Path, mutual_tls: Path) -> None:
    """With the client certificate every check passes, also by IP address with the DNS name
    given; without it the sidecar is never ready."""
    port = (mutual_tls / "port").read_text()
    tls = ["--ca", str(mutual_tls / "ca.pem")]
    client = ["--cert", str(mutual_tls / "client.pem"), "--key", str(mutual_tls / "client.key")]
    for addr, name in ((f"localhost:{port}", []), (f"127.0.0.1:{port}",
                                                   ["--server-name", "localhost"])):
        out = run(rust_built / "selftest", addr, *tls, *client, *name, stdin="")
        assert out.code == 0 and out.stdout.splitlines()[-1].endswith(" ok, 0 failed"), out.stdout
    out = run(rust_built / "selftest", f"localhost:{port}", *tls, "--wait", "0.5", stdin="")
    assert out.code == 2 and "cannot reach the sidecar" in out.stderr
    out = run(rust_built / "selftest", f"127.0.0.1:{port}", *tls, *client, stdin="")
    assert out.code == 1 and "not a DNS name" in out.stderr
