"""Caller strings in error messages and log lines: cut, escaped, hashed."""

from __future__ import annotations

import logging

from sidecar.cli import FieldsFormatter
from sidecar.redact import echo, loggable, short_hash


def test_echo_shows_at_most_eight_escaped_characters_and_a_hash() -> None:
    secret = "sk-live-0123456789abcdef"
    shown = echo(secret)
    assert secret[:9] not in shown and shown.startswith("'sk-live-") and "…" in shown
    assert shown.endswith("#" + short_hash(secret)) and echo("other") != echo("other2")
    assert echo("a\nb") == f"'a\\x0ab'#{short_hash('a' + chr(10) + 'b')}"


def test_loggable_escapes_control_characters_and_cuts_long_values() -> None:
    assert loggable("c1\nINFO forged\x85\x1b") == "c1\\x0aINFO forged\\x85\\x1b"
    cut = loggable("x" * 500)
    assert cut.startswith("x" * 96) and cut.endswith("(+404 chars)")


def test_the_log_formatter_never_writes_a_raw_caller_string() -> None:
    record = logging.LogRecord("sidecar", logging.INFO, "f.py", 1, "reset %s",
                               ("a\nb",), None)
    record.channel = "evil\n2026-01-01 INFO forged" + "y" * 300
    line = FieldsFormatter("%(levelname)s %(message)s").format(record)
    assert "\n" not in line and "reset a\\x0ab" in line
    assert "channel=evil\\x0a2026-01-01 INFO forged" in line and "y" * 200 not in line
