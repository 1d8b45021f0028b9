"""deploy/memsidecar.service: valid for systemd (``systemd-analyze verify``, its ExecStart
pointed at a real install of the wheels) and hardened (``systemd-analyze security``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from deploy.tests.conftest import ROOT

UNIT = ROOT / "deploy" / "memsidecar.service"
INSTALLED = "/opt/memsidecar/bin/memsidecar"
MAX_EXPOSURE = "20"  # systemd-analyze's exposure level x10: "OK" is below 2.0


def analyze() -> str:
    """systemd-analyze, from Debian's `systemd` package when missing."""
    if shutil.which("systemd-analyze") is None:
        subprocess.run(["bash", "-c", f". {ROOT}/clients/apt.sh && apt_ensure systemd systemd"],
                       check=True)
    found = shutil.which("systemd-analyze")
    assert found, "systemd-analyze is missing and could not be installed"
    return found


def local_copy(tmp_path: Path, wheel_venv: Path) -> Path:
    text = UNIT.read_text()
    assert f"ExecStart={INSTALLED} serve" in text
    unit = tmp_path / UNIT.name
    unit.write_text(text.replace(INSTALLED, str(wheel_venv / "bin" / "memsidecar")))
    return unit


def test_unit_verifies(tmp_path: Path, wheel_venv: Path) -> None:
    done = subprocess.run([analyze(), "verify", str(local_copy(tmp_path, wheel_venv))],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_unit_is_hardened(tmp_path: Path, wheel_venv: Path) -> None:
    text = UNIT.read_text()
    for setting in ("Type=notify", "DynamicUser=yes", "StateDirectory=memsidecar",
                    "ProtectSystem=strict", "ProtectHome=yes", "NoNewPrivileges=yes",
                    "PrivateTmp=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
                    "SystemCallFilter=@system-service", "LimitNOFILE=65536"):
        assert f"\n{setting}\n" in text, setting
    done = subprocess.run([analyze(), "security", "--offline=true",
                           f"--threshold={MAX_EXPOSURE}", str(local_copy(tmp_path, wheel_venv))],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
