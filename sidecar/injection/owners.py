"""Channel ownership: a channel belongs to the agent of the first Inject on it.

Kept in a table of its own (``channel_owners``, from the store's migrations), next to the
injection state it guards, with the time of the channel's last use for the idle sweep
(``sidecar.injection.sweep``). The last use is written at most once per ``TOUCH_EVERY_US``
per channel, so an Inject rarely writes here.

A shared store away (``Unavailable``): a channel this sidecar has seen keeps its known owner; a
channel it has not is claimed *provisionally*, in memory, by the agent of its first Inject, and
its injection state is held here (``Settle.hold``). The first claim once the store answers
settles it: a channel still unowned there becomes the provisional owner's (the turns made
meanwhile are then written); a channel another sidecar claimed meanwhile stays theirs, and the
turns made here are dropped, not merged (``Settle.settle``, which logs it).
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from sidecar.errors import PermissionDenied, StorageFault, Unavailable
from sidecar.redact import echo
from sidecar.store.contract import SqlStore
from sidecar.timing import now_us

log = logging.getLogger(__name__)

TOUCH_EVERY_US = 60 * 1_000_000


class Settle(Protocol):
    """The injection state's side of a provisional claim (``ChannelStates``)."""

    def hold(self, channel_id: str) -> None:
        """Keep the channel's commits here until its claim is settled."""

    def settle(self, channel_id: str, kept: bool) -> None:
        """Write the held commits (``kept``) or drop them and the memory copy."""


class ChannelOwners:
    def __init__(self, db: SqlStore, states: Settle | None = None) -> None:
        self.db = db
        self.states = states
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[str, int]] = {}  # channel -> (owner, last touch written)
        # Only this process writes the owners (SQLite, one server per data dir): an owner it
        # claimed a channel for is the stored one until it releases the channel.
        self._sole = db.dialect == "sqlite"
        self._provisional: dict[str, str] = {}  # channel -> owner, claimed while store away

    def claim(self, channel_id: str, agent_id: str) -> bool:
        """Record a use of the channel by ``agent_id``; the first user owns it. Returns whether
        this call took ownership (the channel had no owner), so a failed call can undo it.

        PermissionDenied when another agent ('' = the shared scope) owns it."""
        now = now_us()
        with self._lock:
            seen = self._seen.get(channel_id)
            if channel_id not in self._provisional and seen is not None and \
                    seen[0] == agent_id and now - seen[1] < TOUCH_EVERY_US:
                return False
            try:
                took = self._claim(channel_id, agent_id, now)
            except Unavailable:
                return self._claim_here(channel_id, agent_id, seen)
            self._seen[channel_id] = (agent_id, now)
        return took

    def _claim(self, channel_id: str, agent_id: str, now: int) -> bool:
        if channel_id in self._provisional:
            self._settle(channel_id, now)
        owner = None
        try:
            with self.db.transaction():
                owner = self._owner(channel_id)
                if owner is not None and owner != agent_id:
                    raise _denied(channel_id)
                self.db.execute(
                    "INSERT INTO channel_owners (channel_id, agent_id, last_used_us) "
                    "VALUES (?, ?, ?) ON CONFLICT (channel_id) DO UPDATE SET "
                    "agent_id = excluded.agent_id, last_used_us = excluded.last_used_us",
                    (channel_id, agent_id, now))
        except StorageFault:
            if owner is None:
                raise  # a new channel's owner must be stored
            # the disk refuses writes: the owner stands, its last use is written later
        return owner is None

    def _settle(self, channel_id: str, now: int) -> None:
        """The store answers again: the provisional claim stands unless another sidecar
        claimed the channel meanwhile."""
        with self.db.transaction():
            kept = self._owner(channel_id) is None
            if kept:
                self.db.execute(
                    "INSERT INTO channel_owners (channel_id, agent_id, last_used_us) "
                    "VALUES (?, ?, ?)", (channel_id, self._provisional[channel_id], now))
        del self._provisional[channel_id]
        if self.states is not None:
            self.states.settle(channel_id, kept)

    def _claim_here(self, channel_id: str, agent_id: str,
                    seen: tuple[str, int] | None) -> bool:
        """The store is away: the owner this sidecar knows, else a provisional claim."""
        owner = seen[0] if seen is not None else self._provisional.get(channel_id)
        if owner is not None:
            if owner != agent_id:
                raise _denied(channel_id)
            return False
        self._provisional[channel_id] = agent_id
        if self.states is not None:
            self.states.hold(channel_id)
        log.warning("shared store away: channel claimed provisionally until it is back",
                    extra={"channel": channel_id, "agent": agent_id})
        return True

    def check(self, channel_id: str, agent_id: str) -> None:
        """PermissionDenied unless the channel is unowned or ``agent_id``'s."""
        owner = self._provisional.get(channel_id)
        if owner is None:
            seen = self._seen.get(channel_id) if self._sole else None
            owner = seen[0] if seen is not None else self._owner(channel_id)
        if owner is not None and owner != agent_id:
            raise _denied(channel_id)

    def release(self, channel_id: str) -> None:
        """Forget the channel (after a reset or a sweep): the next Inject claims it afresh."""
        with self._lock:
            self._seen.pop(channel_id, None)
            if self._provisional.pop(channel_id, None) is not None:  # never written
                if self.states is not None:
                    self.states.settle(channel_id, kept=False)
                return
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
