"""Stateless CSRF tokens: ``<issued>.<mac>``, the HMAC-SHA256 of the issue time (Unix seconds)
and of the session it belongs to ("" with authentication off), under a key kept in the data
dir (``admin-csrf.key``, 0600, made on first use). Nothing is stored per visitor; a token is
good for ``TOKEN_S`` after it was issued, across restarts, and only with its own session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from sidecar.files import write_atomic

log = logging.getLogger(__name__)

KEY_FILENAME = "admin-csrf.key"
TOKEN_S = 12 * 3600
SKEW_S = 300  # a token issued this far in the future (a clock stepped back) still passes
_TOKEN = re.compile(r"([0-9]{1,12})\.([A-Za-z0-9_-]{43})", re.ASCII)


class Csrf:
    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock

    def issue(self, session: str = "") -> str:
        issued = int(self._clock())
        return f"{issued}.{self._mac(issued, session)}"

    def check(self, token: str, session: str = "") -> bool:
        """The token was issued by this data dir's key for ``session``, within ``TOKEN_S``.
        Any string is safe here (non-ASCII, overlong: refused without an exception)."""
        found = _TOKEN.fullmatch(token)
        if found is None:
            return False
        issued = int(found.group(1))
        if not -SKEW_S <= self._clock() - issued <= TOKEN_S:
            return False
        return hmac.compare_digest(found.group(2).encode("ascii"),
                                   self._mac(issued, session).encode("ascii"))

    def _mac(self, issued: int, session: str) -> str:
        message = f"csrf\0{issued}\0{session}".encode("utf-8", "surrogatepass")
        digest = hmac.new(self._key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def data_dir_key(data_dir: Path) -> bytes:
    """The data dir's key (32 random bytes, hex in ``KEY_FILENAME``), made when missing or
    unreadable; a data dir that cannot be written gets a key for this run only (one WARNING:
    pages open before a restart then ask to be reloaded)."""
    path = data_dir / KEY_FILENAME
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
        if len(key) == 32:
            return key
    except (OSError, ValueError):
        pass
    key = secrets.token_bytes(32)
    try:
        write_atomic(path, key.hex() + "\n")
    except OSError as err:
        log.warning("admin page: cannot write %s (%s); its CSRF key lasts until the restart",
                    path, err.strerror, extra={"path": str(path)})
    return key
