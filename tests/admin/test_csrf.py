"""Stateless CSRF tokens: bound to the data dir's key, the session and a time window."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from sidecar.admin.csrf import KEY_FILENAME, SKEW_S, TOKEN_S, Csrf, data_dir_key


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_token_passes_for_its_session_within_its_window() -> None:
    clock = Clock()
    csrf = Csrf(b"k" * 32, clock)
    anonymous, bound = csrf.issue(), csrf.issue("sid-1")
    assert csrf.check(anonymous) and csrf.check(bound, "sid-1")
    assert not csrf.check(anonymous, "sid-1") and not csrf.check(bound)
    assert not csrf.check(bound, "sid-2")
    clock.now += TOKEN_S
    assert csrf.check(anonymous)
    clock.now += 1
    assert not csrf.check(anonymous)
    clock.now -= TOKEN_S + 1 + SKEW_S  # issued SKEW_S in the future: a clock stepped back
    assert csrf.check(anonymous)
    clock.now -= 1
    assert not csrf.check(anonymous)


def test_forgeries_and_hostile_strings_are_refused_without_an_exception() -> None:
    clock = Clock()
    csrf = Csrf(b"k" * 32, clock)
    token = csrf.issue()
    issued, mac = token.split(".")
    later = str(int(issued) + 1)
    for forged in ("", ".", token + "=", " " + token, token.upper(), f"{later}.{mac}",
                   Csrf(b"j" * 32, clock).issue(), "é" * 54, f"{issued}.{'é' * 43}",
                   f"{issued}.{mac[:-1]}\udcff", "\x00" * 54, "9" * 10_000 + "." + mac,
                   f"-{issued}.{mac}", f"{issued}.{mac}\n", "１" * 10 + "." + mac):
        assert not csrf.check(forged), forged


def test_the_key_lives_in_the_data_dir(tmp_path: Path) -> None:
    key = data_dir_key(tmp_path)
    path = tmp_path / KEY_FILENAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert data_dir_key(tmp_path) == key  # a token outlives a restart
    path.write_text("not hex\n")
    fresh = data_dir_key(tmp_path)
    assert len(fresh) == 32 and fresh != key and data_dir_key(tmp_path) == fresh
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_data_dir_that_cannot_be_written_gets_a_key_for_this_run(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "file").write_text("")
    with caplog.at_level(logging.WARNING):
        key = data_dir_key(tmp_path / "file" / "data")
    assert len(key) == 32
    assert [r.getMessage() for r in caplog.records if "CSRF key" in r.getMessage()]
