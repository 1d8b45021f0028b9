"""Bearer tokens, stored only as SHA-256 hashes in ``DATA_DIR/tokens.json`` (mode 0600).

A token reads ``msk_<id>_<secret>``: ``id`` (8 hex characters) names the entry in listings and
revocations; the whole token is hashed. A presented token is compared against every entry's
hash with ``hmac.compare_digest``, so the time taken does not depend on how much of it matched.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from sidecar.auth.identity import AGENT, OPERATOR, Identity
from sidecar.errors import InvalidArgument, NotFound
from sidecar.files import write_atomic

TOKENS_FILENAME = "tokens.json"
PREFIX = "msk"


@dataclass(frozen=True, slots=True)
class TokenEntry:
    id: str
    role: str  # OPERATOR or AGENT
    agent_id: str
    sha256: str
    created_at: int  # unix seconds

    def identity(self) -> Identity:
        return Identity(self.role, self.agent_id, self.id)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class TokenStore:
    """The tokens file of a data dir; re-read when it changes on disk (add/revoke while
    serving take effect on the next call)."""

    def __init__(self, data_dir: Path | str) -> None:
        self.path = Path(data_dir) / TOKENS_FILENAME
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._entries: list[TokenEntry] = []

    def entries(self) -> list[TokenEntry]:
        with self._lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                self._stamp, self._entries = None, []
                return []
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                raw = json.loads(self.path.read_text(encoding="utf-8"))
                self._entries = [TokenEntry(**item) for item in raw.get("tokens", [])]
                self._stamp = stamp
            return list(self._entries)

    def verify(self, token: str) -> Identity | None:
        """The identity of a presented token, or None. Every entry is compared."""
        digest = _digest(token)
        found: TokenEntry | None = None
        for entry in self.entries():
            if hmac.compare_digest(entry.sha256, digest):
                found = entry
        return found.identity() if found else None

    def add(self, role: str, agent_id: str = "") -> tuple[str, TokenEntry]:
        """Create a token; returns it (shown once, never stored) and its entry."""
        if role == AGENT and not agent_id:
            raise InvalidArgument("an agent token needs --agent NAME", field="agent")
        if role == OPERATOR:
            agent_id = ""
        token_id = secrets.token_hex(4)
        token = f"{PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
        entry = TokenEntry(token_id, role, agent_id, _digest(token), int(time.time()))
        self._write([*self.entries(), entry])
        return token, entry

    def revoke(self, token_id: str) -> TokenEntry:
        entries = self.entries()
        gone = [e for e in entries if e.id == token_id]
        if not gone:
            raise NotFound(f"no token with id {token_id!r} (see memsidecar token list)",
                           field="id")
        self._write([e for e in entries if e.id != token_id])
        return gone[0]

    def _write(self, entries: list[TokenEntry]) -> None:
        text = json.dumps({"tokens": [asdict(e) for e in entries]}, indent=2) + "\n"
        with self._lock:
            write_atomic(self.path, text)
            self._stamp = None
