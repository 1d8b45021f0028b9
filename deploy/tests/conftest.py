"""Fixtures of the deployment checks: the wheels of ``make dist`` installed into a fresh
virtualenv outside the repository, free ports, waiting for SERVING."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
START_TIMEOUT_S = 600.0  # a bound for a broken start only; a normal start answers sooner


def wheels() -> list[Path]:
    found = sorted(DIST.glob("memsidecar-*.whl")) + sorted(DIST.glob("memsidecar_client-*.whl"))
    assert len(found) == 2, f"expected the server and client wheels in {DIST}: run `make dist`"
    return found


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a process that must not see the repository."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv outside the repository with only the two wheels and their dependencies."""
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    assert not venv.is_relative_to(ROOT)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    *map(str, wheels())], check=True, cwd=venv, env=clean_env())
    return venv


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_serving(addr: str, timeout: float = START_TIMEOUT_S) -> None:
    """Block until ``addr``'s health service reports SERVING (the Watch stream: no polling)."""
    with grpc.insecure_channel(addr) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        replies = stub.Watch(health_pb2.HealthCheckRequest(), timeout=timeout,
                             wait_for_ready=True)
        for reply in replies:
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                replies.cancel()
                return
    raise AssertionError(f"{addr} stopped before reporting SERVING")


@pytest.fixture(scope="session")
def image() -> str:
    """The image of ``deploy/podman/podman.sh image`` (built from dist/), by its tag."""
    from deploy.tests.podman import build_image

    return build_image()


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    """A datagram socket standing in for systemd's ``$NOTIFY_SOCKET``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(tmp_path / "notify.sock"))
        sock.settimeout(START_TIMEOUT_S)
        yield sock
