"""The container image (Containerfile) built with podman from a local Debian base, run as a
sidecar on the host network: SERVING seen from the host, Inject answered, a clean exit on
SIGTERM (the server is PID 1) within the stop timeout."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from memsidecar_client import Client

from deploy.tests.conftest import free_port, wait_serving
from deploy.tests.podman import inspect, podman

DATA = "/var/lib/memsidecar"
STOP_TIMEOUT_S = 30  # podman sends SIGKILL after this: exit code 137 instead of 0


@pytest.fixture
def volume() -> Iterator[str]:
    name = f"memsidecar-test-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", name)
    yield name
    podman("volume", "rm", "--force", name, check=False)


def test_image_runs_as_a_non_root_user_with_its_data_on_a_volume(image: str) -> None:
    config = inspect("image", image)["Config"]
    assert config["User"] == "10001:10001"
    assert DATA in config["Volumes"] and "50051/tcp" in config["ExposedPorts"]
    assert config["Entrypoint"] == ["memsidecar"]
    assert config["Cmd"][:3] == ["serve", "--data-dir", f"{DATA}/data"]
    assert podman("run", "--rm", image, "--version").stdout.startswith("memsidecar ")


def test_container_serves_injects_and_exits_cleanly_on_sigterm(image: str, volume: str) -> None:
    addr = f"127.0.0.1:{free_port()}"
    name = f"memsidecar-test-{uuid.uuid4().hex[:8]}"
    podman("run", "--detach", "--name", name, "--network=host", "--volume", f"{volume}:{DATA}",
           image, "serve", "--data-dir", f"{DATA}/data", "--listen", addr)
    try:
        wait_serving(addr)
        assert podman("exec", name, "id", "-u").stdout.strip() == "10001"
        assert podman("exec", name, "memsidecar", "health", "--addr", addr).returncode == 0
        with Client(addr) as client:
            client.upsert("The billing service runs on port 8080", "decision", agent_id="ada")
            reply = client.inject("which port does billing use?", channel_id="c1",
                                  agent_id="ada")
        assert reply.block.startswith("[Context from memory]") and "port 8080" in reply.block
        podman("stop", "--time", str(STOP_TIMEOUT_S), name)
        state = inspect("container", name)["State"]
        logs = podman("logs", name).stderr
        assert state["ExitCode"] == 0, logs[-2000:]
        assert "shutting down" in logs and "stopped" in logs
    finally:
        podman("rm", "--force", name, check=False)
