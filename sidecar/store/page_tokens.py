"""Page tokens (ListMemories, VaultStats): the last row's sort keys, signed so a caller cannot
forge one.

A token is ``<base64url JSON {"s": sort, "k": keys}>.<HMAC-SHA256, 32 hex>`` under a key the
App derives from the data dir's secret (``injection.key``), so tokens outlive a restart and, with
that file copied to every host, work on any host of a shared store. A token whose MAC does not
match is INVALID_ARGUMENT before its content is read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any

from sidecar.errors import InvalidArgument

MAC_CHARS = 32
INT64_MAX = 2**63 - 1
SCOPE = "scope"  # VaultStats pages: the key is the last scope's agent_id
MAX_KEY_CHARS = 256  # a text key (an agent id) is at most a name's length


class PageTokens:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)  # None: this process

    def encode(self, sort: str, values: list[Any]) -> str:
        data = json.dumps({"s": sort, "k": values}, ensure_ascii=False)
        body = base64.urlsafe_b64encode(data.encode())
        text = body.decode().rstrip("=")
        return f"{text}.{self._mac(text)}"

    def decode(self, token: str, sort: str, width: int) -> list[Any]:
        """The key values of ``token``, issued for ``sort`` with ``width`` keys."""
        body, _, mac = token.rpartition(".")
        if not body or not hmac.compare_digest(mac.encode(), self._mac(body).encode()):
            raise _forged(sort)
        try:
            data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            values = data["k"]
            ok = (data["s"] == sort and isinstance(values, list) and len(values) == width
                  and all(_value_ok(v, sort, i) for i, v in enumerate(values)))
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            raise _forged(sort)
        return list(values)

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()[:MAC_CHARS]


def _forged(sort: str) -> InvalidArgument:
    issuer = "VaultStats" if sort == SCOPE else "ListMemories with the same sort order"
    return InvalidArgument(
        f"page_token is not a token returned by {issuer}; "
        "pass the next_page_token of the previous page unchanged", field="page_token")


def _value_ok(value: Any, sort: str, index: int) -> bool:
    """A key value as ``encode`` writes it: an agent id for scope pages, importance a finite
    float in [0, 1], timestamps and seq non-negative int64s."""
    if isinstance(value, bool):
        return False
    if sort == SCOPE:
        return isinstance(value, str) and len(value) <= MAX_KEY_CHARS
    if index == 0 and sort == "importance":
        return isinstance(value, (int, float)) and 0.0 <= value <= 1.0
    return isinstance(value, int) and 0 <= value <= INT64_MAX
