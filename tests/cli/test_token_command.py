"""`memsidecar token list|revoke` read a data dir and never create one; an empty token store
says so."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sidecar.cli import main


def token(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["token", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_listing_a_missing_data_dir_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    typo = tmp_path / "dtaa"
    for args in (["list"], ["revoke", "0123abcd"]):
        code, out, err = token(capsys, *args, "--data-dir", str(typo))
        assert code == 2 and out == ""
        assert err == (f"memsidecar token: no tokens: {typo} is not a directory (pass the "
                       "sidecar's --data-dir)\n")
    assert not typo.exists()


def test_an_empty_token_store_says_no_tokens(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    tmp_path.chmod(0o755)
    before = sorted(os.listdir(tmp_path))
    code, out, err = token(capsys, "list", "--data-dir", str(tmp_path))
    assert (code, out, err) == (0, f"no tokens in {tmp_path / 'tokens.json'}\n", "")
    assert sorted(os.listdir(tmp_path)) == before
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755  # a read changes no mode


def test_add_creates_the_data_dir_owner_only_then_list_and_revoke(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "fresh" / "data"
    code, out, _ = token(capsys, "add", "--agent", "ada", "--data-dir", str(data))
    assert code == 0 and stat.S_IMODE(data.stat().st_mode) == 0o700
    secret = out.splitlines()[-1]
    code, out, _ = token(capsys, "list", "--data-dir", str(data))
    assert code == 0 and "ada" in out and "no tokens" not in out and secret not in out
    assert token(capsys, "revoke", secret.split("_")[1], "--data-dir", str(data))[0] == 0
    assert token(capsys, "list", "--data-dir", str(data))[1].startswith("no tokens in ")


def test_revoke_names_whom_the_token_acted_for(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for who, args in (("the operator", ["--operator"]), ("agent ada", ["--agent", "ada"])):
        code, out, _ = token(capsys, "add", *args, "--data-dir", str(tmp_path))
        first = out.splitlines()[0]
        assert code == 0 and first.endswith(f" for {who} (shown once; store it now):")
        ident = first.split()[1]
        code, out, _ = token(capsys, "revoke", ident, "--data-dir", str(tmp_path))
        assert (code, out) == (0, f"revoked {ident} (the token of {who})\n")


def test_a_relative_data_dir_is_named_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, _ = token(capsys, "list", "--data-dir", "data")
    assert (code, out) == (0, f"no tokens in {tmp_path / 'data' / 'tokens.json'}\n")
