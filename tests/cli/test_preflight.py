"""`memsidecar config check` runs every start-up check `serve` makes that needs neither the
network nor the data dir (the same functions), and says which checks only a start can make:
a file serve refuses is never OK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from sidecar.cli import main
from tests.api.test_tls import Pki
from tests.clients.agent_loops import ROOT

# name -> (the file's text, a phrase of the reason serve gives); {tmp} is a temp folder
REFUSED = {
    "remote without auth": ('[server]\nlisten = "0.0.0.0:50051"\n', "allow_insecure_remote"),
    "no port": ('[server]\nlisten = "127.0.0.1"\n', "expected HOST:PORT"),
    "port out of range": ('[server]\nlisten = "127.0.0.1:99999"\n', "expected HOST:PORT"),
    "empty unix path": ('[server]\nlisten = "unix://"\n', "expected HOST:PORT"),
    "http without port": ('[server.http]\nlisten = "localhost"\n', "admin page and /metrics"),
    "tls key missing": ('[server.tls]\ncert = "{tmp}/server.pem"\n', "needs both cert and key"),
    "tls file missing": ('[server.tls]\ncert = "{tmp}/none.pem"\nkey = "{tmp}/server.key"\n',
                         "cert: cannot read"),
    "tls not pem": ('[server.tls]\ncert = "{tmp}/server.key"\nkey = "{tmp}/server.key"\n',
                    "holds no PEM certificate"),
    "tls key of no certificate": ('[server.tls]\ncert = "{tmp}/server.pem"\n'
                                  'key = "{tmp}/other.key"\n', "is not the private key of"),
    "tls certificate expired": ('[server.tls]\ncert = "{tmp}/expired.pem"\n'
                                'key = "{tmp}/server.key"\n', "/expired.pem expired on "),
    "tls certificate not yet valid": ('[server.tls]\ncert = "{tmp}/future.pem"\n'
                                      'key = "{tmp}/server.key"\n', "is not valid before"),
    "postgres without dsn": ('[store]\nbackend = "postgres"\n', "needs a DSN"),
    "postgres bad dsn": ('[store]\nbackend = "postgres"\ndsn = "host=a port"\n',
                         "DSN is not valid"),
}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    Pki(tmp_path)  # server.pem, server.key, ca.pem; other.key, expired.pem, future.pem
    monkeypatch.delenv("MEMSIDECAR_STORE_DSN", raising=False)
    return tmp_path


def config_file(folder: Path, text: str) -> Path:
    path = folder / "memsidecar.toml"
    path.write_text(text.replace("{tmp}", str(folder)))
    return path


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["config", "check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_serve_refuses_config_check_refuses(
        case: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, reason = REFUSED[case]
    data = folder / "data"
    path = config_file(folder, text)
    code, out, err = check(capsys, str(path), "--data-dir", str(data))
    assert code == 2 and out == ""
    assert err.startswith(f"memsidecar config check: {path}: serve would refuse to start (1 of ")
    (failed,) = [line for line in err.splitlines() if line.startswith("  FAILED ")]
    assert reason in failed
    assert "  not run binding " in err and f"  not run the data dir ({data})" in err
    env = {k: v for k, v in os.environ.items() if k != "MEMSIDECAR_STORE_DSN"}
    served = subprocess.run(
        [sys.executable, "-m", "sidecar", "serve", "--config", str(path), "--data-dir",
         str(data)], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert served.returncode == 2, served.stderr
    (said,) = served.stderr.strip().splitlines()
    assert said.startswith("memsidecar serve: ") and reason in said
    assert said.removeprefix("memsidecar serve: ") in failed  # the same check, the same words
    assert not data.exists()  # refused before the data dir was touched


def test_a_file_serve_accepts_lists_each_check(folder: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = folder / "data"
    path = config_file(folder, '[server]\nlisten = "0.0.0.0:50051"\n'
                       '[server.auth]\nallow_insecure_remote = true\n'
                       f'[server.tls]\ncert = "{folder}/server.pem"\n'
                       f'key = "{folder}/server.key"\nclient_ca = "{folder}/ca.pem"\n')
    code, out, err = check(capsys, str(path), "--data-dir", str(data))
    assert (code, err) == (0, "")
    head = [line for line in out.splitlines() if line.startswith("# ")]
    cert = x509.load_pem_x509_certificate((folder / "server.pem").read_bytes())
    until = cert.not_valid_after_utc.strftime("%Y-%m-%d %H:%M UTC")
    assert head[:7] == [
        f"# {path}: OK (0 [[agents]] sections)",
        "# ok      listen address: 0.0.0.0:50051",
        "# ok      authentication for that address: remote, allow_insecure_remote",
        f"# ok      TLS files: mutual TLS, certificate valid until {until}",
        "# ok      HTTP address: 127.0.0.1:9464",
        "# ok      embedding model files: minilm-int8",
        "# ok      store: sqlite"]
    assert head[7].startswith("# not run binding 0.0.0.0:50051 and 127.0.0.1:9464")
    assert head[8].startswith(f"# not run the data dir ({data}): ")
    assert "[server]\nlisten = \"0.0.0.0:50051\"\n" in out
    assert not data.exists()


def test_the_command_line_overrides_are_checked_too(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = folder / "plain.toml"
    path.write_text("")
    assert check(capsys, str(path))[0] == 0
    code, _, err = check(capsys, str(path), "--listen", "0.0.0.0:7000", "--http-listen", "x")
    assert code == 2 and "(2 of 6 start-up checks failed)" in err
    assert check(capsys, str(path), "--listen", "unix:///tmp/m.sock", "--http-listen", "")[0] == 0


def test_postgres_names_the_connection_it_cannot_check(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = folder / "pg.toml"
    path.write_text('[store]\nbackend = "postgres"\n'
                    'dsn = "postgresql://memsidecar:s3cret@db.internal:5433/memories"\n')
    code, out, _ = check(capsys, str(path))
    assert code == 0 and "s3cret" not in out
    assert "# ok      store: postgres at postgresql://memsidecar@db.internal:5433/memories" in out
    assert "# not run the PostgreSQL connection and schema: needs the network" in out


def test_a_relative_data_dir_is_named_in_full(folder: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = config_file(folder, "")
    monkeypatch.chdir(folder)
    code, out, _ = check(capsys, str(path), "--data-dir", "data")
    assert code == 0 and f"# not run the data dir ({folder / 'data'}): " in out
    assert f"# {path}: OK (0 [[agents]] sections)\n" in out
