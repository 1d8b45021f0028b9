"""The wheels of ``make dist`` installed into a fresh virtualenv outside the repository:
``memsidecar serve`` starts on its defaults (the embedded model and tokenizer), tells systemd
it is ready, answers Inject and exits cleanly on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path

from memsidecar_client import Client

from deploy.tests.conftest import ROOT, clean_env, free_port, wait_serving
from sidecar import __version__


def run(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True,
                          text=True, cwd=venv, env=clean_env(), timeout=300)


def test_version_is_the_distributions(wheel_venv: Path) -> None:
    done = run(wheel_venv, "memsidecar", "--version")
    assert done.returncode == 0 and done.stdout == f"memsidecar {__version__}\n"


def test_the_install_is_the_wheels_without_torch_or_onnx(wheel_venv: Path) -> None:
    code = ("import json, sidecar, importlib.util as u; print(json.dumps([sidecar.__file__, "
            "[n for n in ('torch', 'onnx', 'sentence_transformers') if u.find_spec(n)]]))")
    done = run(wheel_venv, "python", "-c", code)
    where, heavy = json.loads(done.stdout)
    assert Path(where).is_relative_to(wheel_venv) and not Path(where).is_relative_to(ROOT)
    assert heavy == []


def test_the_embedded_model_matches_its_checksum(wheel_venv: Path) -> None:
    code = ("from sidecar.embedding.config import EmbeddingConfig;"
            "from sidecar.embedding.models import model_files;"
            "print(model_files(EmbeddingConfig().model, verify=True).onnx)")
    done = run(wheel_venv, "python", "-c", code)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(wheel_venv)


def test_serve_on_defaults_is_ready_answers_inject_and_stops_on_sigterm(
        wheel_venv: Path, tmp_path: Path, notify_socket: socket.socket) -> None:
    addr = f"127.0.0.1:{free_port()}"
    env = clean_env(NOTIFY_SOCKET=notify_socket.getsockname())
    log = tmp_path / "serve.log"
    server = subprocess.Popen(
        [str(wheel_venv / "bin" / "memsidecar"), "serve", "--data-dir", str(tmp_path / "data"),
         "--listen", addr], cwd=tmp_path, env=env, stderr=log.open("w"))
    try:
        assert notify_socket.recv(64) == b"READY=1"  # sent once SERVING
        wait_serving(addr, timeout=10)
        assert run(wheel_venv, "memsidecar", "health", "--addr", addr).returncode == 0
        with Client(addr) as client:
            client.upsert("The billing service runs on port 8080", "decision", agent_id="ada")
            reply = client.inject("which port does billing use?", channel_id="c1",
                                  agent_id="ada")
        assert reply.block.startswith("[Context from memory]") and "port 8080" in reply.block
        server.send_signal(signal.SIGTERM)
        assert notify_socket.recv(64) == b"STOPPING=1"
        assert server.wait(timeout=120) == 0
    finally:
        server.kill()
    assert "stopped" in log.read_text()
    down = run(wheel_venv, "memsidecar", "health", "--addr", addr, "--timeout", "1")
    assert down.returncode == 2 and "UNAVAILABLE" in down.stderr
