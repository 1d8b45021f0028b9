"""Channels known to hold back nothing: the reads of their held captures are skipped.

A channel is quiet once a read of its held captures found none that counts (held, and
pending, stored or deduplicated: a capture refused by the drain keeps ``held`` but resolves
to no memory and no text) and no capture of it was written since the read began. Only an
insert makes a channel hold something again (a capture's outcome only moves from pending to
one of the others, a release or an erasure only holds less), so the repo forgets a channel's
quiet as it inserts one of its captures, and a read that began before that insert cannot
declare it quiet (``begin`` / ``found_none``: every insert moves a counter). The read that
declares it is one serialised with the writes (the main connection's, which a transaction
holds until it commits): a read apart would miss an insert not committed yet.

Exact only where this process writes every capture of the store: the repo keeps none on a
shared store (PostgreSQL: other sidecars capture on the same channels). A restart starts
with none known (each channel's first read is done).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

# Channels remembered at most (the oldest forgotten first: their next read is done again).
MAX_QUIET = 16384


class QuietChannels:
    def __init__(self, limit: int = MAX_QUIET) -> None:
        self.limit = limit
        self._quiet: OrderedDict[str, None] = OrderedDict()
        self._writes = 0  # inserts of a capture so far
        self._lock = threading.Lock()

    def __contains__(self, channel_id: str) -> bool:
        return channel_id in self._quiet

    def begin(self) -> int:
        """Taken before a read of held captures: what ``found_none`` compares with."""
        return self._writes

    def found_none(self, channel_id: str, began: int) -> None:
        """A read begun at ``began`` found nothing the channel holds."""
        with self._lock:
            if self._writes != began:  # a capture was written meanwhile (any channel)
                return
            self._quiet[channel_id] = None
            self._quiet.move_to_end(channel_id)
            while len(self._quiet) > self.limit:
                self._quiet.popitem(last=False)

    def written(self, channel_id: str) -> None:
        """A capture of the channel was inserted (called after the insert: a read that
        follows sees it, one that went before cannot declare the channel quiet)."""
        with self._lock:
            self._writes += 1
            self._quiet.pop(channel_id, None)
