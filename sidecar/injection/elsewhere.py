"""Channels reset or erased by another sidecar of a shared store: what this one holds of them
in memory goes.

The change feed names each channel whose state another sidecar deleted (a ResetChannel, a
user's erasure, the idle sweep) by the SHA-256 of its id (PostgreSQL migration 11), so the
change rows keep no caller string. ``ResetElsewhere`` matches the digests against the
channels this sidecar holds (state copies and their reads in flight, trace rings, capture's
last messages) and drops each match from memory, as its own ``Injector.erase`` would, without
touching the store (the other sidecar did), with the channel's commits kept for a store away
(decision 0047). A memory another sidecar erased for good
(ForgetMemory with ``hard``, ForgetUser, retention) blanked the saved replies quoting it:
``erased`` drops the copies that name it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection

from sidecar.capture.capture import Capture
from sidecar.injection.channels import ChannelStates
from sidecar.injection.trace import TraceRing

log = logging.getLogger(__name__)


def channel_digest(channel_id: str) -> str:
    """How a change row names a channel (migration 11's trigger computes the same)."""
    return hashlib.sha256(channel_id.encode()).hexdigest()


class ResetElsewhere:
    def __init__(self, states: ChannelStates, trace: TraceRing,
                 capture: Capture | None = None) -> None:
        self.states = states
        self.trace = trace
        self.capture = capture
        self._digests: dict[str, str] = {}  # of the channels held at the last call

    def erased(self, ids: Collection[str]) -> int:
        """Memories another sidecar erased for good: the state copies quoting them go
        (``ChannelStates.drop_naming``); how many."""
        return self.states.drop_naming(ids)

    def __call__(self, digests: Collection[str] | None) -> int:
        """Drop the channels of ``digests`` (None: every channel, as a feed gap may hide any
        reset); how many this sidecar held. Called by one thread at a time (the feed's
        reads are serial)."""
        held = {*self.states.names(), *self.trace.names(),
                *(self.capture.names() if self.capture is not None else ())}
        known = self._digests
        self._digests = {c: known.get(c) or channel_digest(c) for c in held}
        wanted = None if digests is None else set(digests)
        gone = [c for c, d in self._digests.items() if wanted is None or d in wanted]
        for channel_id in gone:
            self.states.gone_elsewhere(channel_id)
            self.trace.forget(channel_id)
            if self.capture is not None:
                self.capture.forget(channel_id)
        if gone:
            log.debug("channels reset by another sidecar: memory copies dropped",
                      extra={"channels": len(gone)})
        return len(gone)
