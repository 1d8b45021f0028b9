"""Caller strings made safe to show: in error messages (``echo``) and in log lines (``loggable``).

An error message may reach a log or another person: it shows at most ``ECHO_CHARS`` sanitised
characters of a value and a short hash, enough to tell two values apart, never a whole secret.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

ECHO_CHARS = 8
LOG_CHARS = 96
# Unicode Cc (C0, DEL, C1) and the line and paragraph separators (Zl, Zp): what breaks a line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def hidden(char: str) -> bool:
    """A character outside printable text: Unicode Cc (controls), Cf (format: bidi overrides,
    zero-width), Zl, Zp (line and paragraph separators), Co (private use), Cs (surrogates)
    and Cn (unassigned). Spaces (Zs) are printable text."""
    return not char.isprintable() and unicodedata.category(char) != "Zs"


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: str) -> str:
    """Every hidden character (``hidden``) as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``."""
    if text.isprintable():
        return text
    return "".join(_escaped(c) if hidden(c) else c for c in text)


def short_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def echo(value: str) -> str:
    """``'abcdefgh…'#1a2b3c4d`` for an error message: a cut, escaped prefix and a hash."""
    head = escape(value[:ECHO_CHARS])
    more = "…" if len(value) > ECHO_CHARS else ""
    return f"'{head}{more}'#{short_hash(value)}"


def loggable(value: object) -> str:
    """A log field value: hidden characters escaped (no forged lines), long values cut."""
    text = escape(str(value))
    if len(text) > LOG_CHARS:
        return f"{text[:LOG_CHARS]}…(+{len(text) - LOG_CHARS} chars)"
    return text


def has_control(value: str) -> bool:
    """Whether ``value`` holds a control character or a line or paragraph separator (format
    characters such as the zero-width non-joiner are part of some scripts' words)."""
    return _CONTROL.search(value) is not None
