"""podman, as the deployment checks use it: the project's settings (containers.conf), the
image built by ``deploy/podman/podman.sh image``."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from deploy.tests.conftest import ROOT

SCRIPT = ROOT / "deploy" / "podman" / "podman.sh"
ENV = {**os.environ, "CONTAINERS_CONF": str(ROOT / "deploy" / "podman" / "containers.conf")}


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, env=ENV,
                          timeout=600)
    assert not check or done.returncode == 0, f"podman {args[0]}: {done.stderr[-2000:]}"
    return done


def build_image() -> str:
    """The image's tag; fails (with the script's last words) when podman cannot be had."""
    done = subprocess.run(["bash", str(SCRIPT), "image"], capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, f"{SCRIPT.name} image failed:\n{done.stderr[-3000:]}"
    return done.stdout.strip().splitlines()[-1]


def inspect(kind: str, name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = json.loads(podman(kind, "inspect", name).stdout)
    return found[0]
