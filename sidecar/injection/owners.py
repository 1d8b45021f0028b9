"""Channel ownership: a channel belongs to the agent of the first Inject on it.

Kept in a table of its own (``channel_owners``, from the store's migrations), next to the
injection state it guards, with the time of the channel's last use for the idle sweep
(``sidecar.injection.sweep``). The last use is written at most once per ``TOUCH_EVERY_US``
per channel, so an Inject rarely writes here.
"""

from __future__ import annotations

import threading

from sidecar.errors import PermissionDenied
from sidecar.redact import echo
from sidecar.store.contract import SqlStore
from sidecar.timing import now_us

TOUCH_EVERY_US = 60 * 1_000_000

class ChannelOwners:
    def __init__(self, db: SqlStore) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[str, int]] = {}  # channel -> (owner, last touch written)

    def claim(self, channel_id: str, agent_id: str) -> bool:
        """Record a use of the channel by ``agent_id``; the first user owns it. Returns whether
        this call took ownership (the channel had no owner), so a failed call can undo it.

        PermissionDenied when another agent ('' = the shared scope) owns it."""
        now = now_us()
        with self._lock:
            seen = self._seen.get(channel_id)
            if seen is not None and seen[0] == agent_id and now - seen[1] < TOUCH_EVERY_US:
                return False
            with self.db.transaction():
                owner = self._owner(channel_id)
                if owner is not None and owner != agent_id:
                    raise _denied(channel_id)
                self.db.execute(
                    "INSERT INTO channel_owners (channel_id, agent_id, last_used_us) "
                    "VALUES (?, ?, ?) ON CONFLICT (channel_id) DO UPDATE SET "
                    "agent_id = excluded.agent_id, last_used_us = excluded.last_used_us",
                    (channel_id, agent_id, now))
            self._seen[channel_id] = (agent_id, now)
        return owner is None

    def check(self, channel_id: str, agent_id: str) -> None:
        """PermissionDenied unless the channel is unowned or ``agent_id``'s."""
        owner = self._owner(channel_id)
        if owner is not None and owner != agent_id:
            raise _denied(channel_id)

    def release(self, channel_id: str) -> None:
        """Forget the channel (after a reset or a sweep): the next Inject claims it afresh."""
        with self._lock:
            self._seen.pop(channel_id, None)
            self.db.execute("DELETE FROM channel_owners WHERE channel_id = ?", (channel_id,))

    def idle_since(self, cutoff_us: int, limit: int = 1000) -> list[str]:
        """Channels with injection state whose last use is older than ``cutoff_us``.

        A channel with state but no row here (state older than this table) is adopted,
        unowned, as used now: it expires one TTL later."""
        self.db.execute(
            "INSERT INTO channel_owners (channel_id, agent_id, last_used_us) "
            "SELECT channel_id, NULL, ? FROM injection_channels WHERE true "
            "ON CONFLICT (channel_id) DO NOTHING", (now_us(),))
        rows = self.db.execute(
            "SELECT channel_id FROM channel_owners WHERE last_used_us < ? "
            "ORDER BY last_used_us LIMIT ?", (cutoff_us, limit))
        return [row[0] for row in rows]

    def _owner(self, channel_id: str) -> str | None:
        row = self.db.query_one(
            "SELECT agent_id FROM channel_owners WHERE channel_id = ?", (channel_id,))
        return None if row is None else row[0]


def _denied(channel_id: str) -> PermissionDenied:
    return PermissionDenied(
        f"channel_id {echo(channel_id)} belongs to another agent (a channel belongs to the "
        "agent that first injected on it); use a channel of your own", field="channel_id")
