"""The block's marker line: an HMAC of the block's text under a per-data-dir secret.

A block ends with one line ``[memsidecar:<mac>]`` directly after its item lines. The history
tools recognise a block by that line alone (whatever role carries it): text that starts like
a block but whose marker is missing or does not match its content is the user's own text.
The secret is created once, readable by the owner only, in the data directory, so blocks
stay recognisable after a restart.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

from sidecar.injection.blocks import BLOCK_PREFIX

KEY_FILE = "injection.key"
KEY_BYTES = 32
MAC_CHARS = 16
MARKER_OPEN = "[memsidecar:"
MARKER_CLOSE = "]"
_MARKER = re.compile(r"\n\[memsidecar:([0-9a-f]{16})\]\Z")
# Texts starting like a block whose verdict is remembered: a history comes back on every
# PruneHistory and Inject, and each of its blocks is checked by several readers of it.
KNOWN_MAX = 1024


class BlockSigner:
    def __init__(self, secret: bytes) -> None:
        if len(secret) < KEY_BYTES:
            raise ValueError(f"the block secret must be at least {KEY_BYTES} bytes")
        self._secret = secret
        self._known: dict[str, tuple[str | None]] = {}  # text -> (``mac_of`` it,)

    @classmethod
    def open(cls, data_dir: Path) -> BlockSigner:
        """The data dir's secret, created (mode 0600) when absent."""
        path = data_dir / KEY_FILE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            secret = path.read_bytes()
            if len(secret) < KEY_BYTES:
                raise RuntimeError(
                    f"{path} holds {len(secret)} bytes, not a {KEY_BYTES}-byte block secret; "
                    "delete it to create a new one (blocks already given out are then "
                    "treated as user text)") from None
            return cls(secret)
        secret = secrets.token_bytes(KEY_BYTES)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(secret)
        except BaseException:  # a full disk: no truncated secret for the next start
            path.unlink(missing_ok=True)
            raise
        return cls(secret)

    def derive(self, purpose: str) -> bytes:
        """A key for another use of the data dir's secret (``purpose`` keeps uses apart)."""
        return hmac.new(self._secret, f"derive:{purpose}".encode(), hashlib.sha256).digest()

    def mac(self, body: str) -> str:
        digest = hmac.new(self._secret, body.encode(), hashlib.sha256).hexdigest()
        return digest[:MAC_CHARS]

    def seal(self, body: str) -> str:
        """``body`` with its marker line appended."""
        return f"{body}\n{MARKER_OPEN}{self.mac(body)}{MARKER_CLOSE}"

    def mac_of(self, content: str) -> str | None:
        """The mac of a genuine block (prefix first, a matching marker last); None otherwise
        (remembered for the last texts that start like a block: ``checked_mac_of``)."""
        if not content.startswith(BLOCK_PREFIX):
            return None
        known = self._known.get(content)  # one lookup: another thread may clear it
        if known is not None:
            return known[0]
        mac = self.checked_mac_of(content)
        if len(self._known) >= KNOWN_MAX:
            self._known.clear()  # the texts of older histories
        self._known[content] = (mac,)
        return mac

    def checked_mac_of(self, content: str) -> str | None:
        """``mac_of``, worked out afresh."""
        if not content.startswith(BLOCK_PREFIX):
            return None
        found = _MARKER.search(content)
        if found is None:
            return None
        expected = self.mac(content[: found.start()])
        return expected if hmac.compare_digest(expected, found.group(1)) else None

    def is_block(self, content: str) -> bool:
        return self.mac_of(content) is not None


def marker_tokens_max(count_tokens: Callable[[str], int]) -> int:
    """Most tokens the marker line can take: its fixed part plus one per mac character (the
    tokenizer splits at the punctuation around the mac, and a word never takes more pieces
    than it has characters)."""
    return count_tokens(MARKER_OPEN + MARKER_CLOSE) + MAC_CHARS
