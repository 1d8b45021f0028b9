"""Caller strings in error messages and log lines: cut, escaped, hashed."""

from __future__ import annotations

import logging

from sidecar.cli import FieldsFormatter
from sidecar.redact import echo, escape, has_control, loggable, short_hash


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


def test_every_hidden_character_is_escaped_and_printable_text_kept() -> None:
    hostile = "a\u202eb\u2028c\u2029d\u200be\ue000f\U000e0041g\u0378h\ufeff"
    assert loggable(hostile) == ("a\\u202eb\\u2028c\\u2029d\\u200be\\ue000f\\U000e0041g"
                                 "\\u0378h\\ufeff")
    assert escape("Grüße 東京 \u00a0\u2009 é") == "Grüße 東京 \u00a0\u2009 é"  # text, spaces
    assert "\u202e" not in echo("\u202eevil") and "\\u202e" in echo("\u202eevil")
    assert has_control("a\u2028b") and has_control("a\x85") and not has_control("a\u200cb")


def test_the_log_formatter_never_writes_a_raw_caller_string() -> None:
    record = logging.LogRecord("sidecar", logging.INFO, "f.py", 1, "reset %s",
                               ("a\nb",), None)
    record.channel = "evil\n2026-01-01 INFO forged" + "y" * 300
    line = FieldsFormatter("%(levelname)s %(message)s").format(record)
    assert "\n" not in line and "reset a\\x0ab" in line
    assert "channel=evil\\x0a2026-01-01 INFO forged" in line and "y" * 200 not in line
    record.agent = "bob\u202e\u2028INFO forged"
    line = FieldsFormatter("%(message)s").format(record)
    assert "agent=bob\\u202e\\u2028INFO forged" in line and "\u2028" not in line
