"""Caller strings made safe to show: in error messages (``echo``) and in log lines (``loggable``).

An error message may reach a log or another person: it shows at most ``ECHO_CHARS`` sanitised
characters of a value and a short hash, enough to tell two values apart, never a whole secret.
"""

from __future__ import annotations

import hashlib
import re

ECHO_CHARS = 8
LOG_CHARS = 96
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # Unicode category Cc: C0, DEL and C1


def escape(text: str) -> str:
    """Control characters as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def short_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def echo(value: str) -> str:
    """``'abcdefgh…'#1a2b3c4d`` for an error message: a cut, escaped prefix and a hash."""
    head = escape(value[:ECHO_CHARS])
    more = "…" if len(value) > ECHO_CHARS else ""
    return f"'{head}{more}'#{short_hash(value)}"


def loggable(value: object) -> str:
    """A log field value: control characters escaped (no forged lines), long values cut."""
    text = escape(str(value))
    if len(text) > LOG_CHARS:
        return f"{text[:LOG_CHARS]}…(+{len(text) - LOG_CHARS} chars)"
    return text


def has_control(value: str) -> bool:
    return _CONTROL.search(value) is not None
