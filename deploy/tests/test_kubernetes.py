"""deploy/kubernetes/: the pod's sidecar container agrees with the image (its tag, user,
volume, port) and with its config (the listen port, the data dir on the volume), the readiness
probe is the grpc health check on that port, and the config passes ``memsidecar config check``."""

from __future__ import annotations

import re
import subprocess
import tomllib
import uuid
from pathlib import Path
from typing import Any

import yaml

from deploy.tests.conftest import ROOT, clean_env
from deploy.tests.podman import inspect, podman

KUBE = ROOT / "deploy" / "kubernetes"


def deployment() -> dict[str, Any]:
    kustomization = yaml.safe_load((KUBE / "kustomization.yaml").read_text())
    docs = [doc for name in kustomization["resources"]
            for doc in yaml.safe_load_all((KUBE / name).read_text())]
    (found,) = [doc for doc in docs if doc["kind"] == "Deployment"]
    claims = {doc["metadata"]["name"] for doc in docs if doc["kind"] == "PersistentVolumeClaim"}
    volumes = {v["name"]: v for v in found["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] in claims
    generated = {g["name"]: g["files"] for g in kustomization["configMapGenerator"]}
    assert generated[volumes["config"]["configMap"]["name"]] == ["memsidecar.toml"]
    return dict(found)


def containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod["containers"] + pod.get("initContainers", [])}


def mounts(container: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container["volumeMounts"]}


def test_sidecar_matches_the_image_and_its_config(image: str) -> None:
    pod = deployment()["spec"]["template"]["spec"]
    sidecar = containers(pod)["memsidecar"]
    image_config = inspect("image", image)["Config"]
    assert sidecar["image"] == image and containers(pod)["memsidecar-token"]["image"] == image
    assert f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}" \
        == image_config["User"]
    (volume,) = image_config["Volumes"]
    assert mounts(sidecar)["data"] == volume
    assert sidecar["args"][:2] == ["serve", "--config"]
    config_path = Path(sidecar["args"][2])
    assert str(config_path.parent) == mounts(sidecar)["config"]
    server = tomllib.loads((KUBE / config_path.name).read_text())["server"]
    port = int(server["listen"].rsplit(":", 1)[1])
    assert Path(server["data_dir"]).is_relative_to(volume)
    assert [p["containerPort"] for p in sidecar["ports"]] == [port]
    assert f"{port}/tcp" in image_config["ExposedPorts"]
    for probe in ("readinessProbe", "startupProbe"):
        assert sidecar[probe]["grpc"] == {"port": port}


def test_token_reaches_the_agent_through_a_memory_volume() -> None:
    pod = deployment()["spec"]["template"]["spec"]
    token = {v["name"]: v for v in pod["volumes"]}["token"]
    assert token["emptyDir"]["medium"] == "Memory"
    init, agent = containers(pod)["memsidecar-token"], containers(pod)["agent"]
    assert mounts(init)["data"] == mounts(containers(pod)["memsidecar"])["data"]
    assert mounts(init)["token"] == mounts(agent)["token"]
    assert "/run/memsidecar/token" in init["args"][0]


def test_token_init_container_writes_a_token(image: str) -> None:
    """The init container's command, run in the image with the pod's mounts."""
    pod = deployment()["spec"]["template"]["spec"]
    init = containers(pod)["memsidecar-token"]
    env = [f"--env={e['name']}={e['value']}" for e in init["env"]]
    volume = f"memsidecar-test-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", volume)
    try:
        done = podman("run", "--rm", *env, f"--volume={volume}:{mounts(init)['data']}",
                      f"--tmpfs={mounts(init)['token']}:mode=1777", "--read-only",
                      f"--entrypoint={init['command'][0]}", image, *init["command"][1:],
                      f"{init['args'][0]} && cat /run/memsidecar/token")
        assert re.fullmatch(r"msk_[0-9a-f]{8}_\S+\n", done.stdout), done.stdout
    finally:
        podman("volume", "rm", "--force", volume, check=False)


def test_config_passes_config_check(wheel_venv: Path) -> None:
    done = subprocess.run([str(wheel_venv / "bin" / "memsidecar"), "config", "check",
                           str(KUBE / "memsidecar.toml")],
                          capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stderr
