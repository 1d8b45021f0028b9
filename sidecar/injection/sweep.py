"""Drops the injection state of channels idle for longer than ``channel_state_ttl`` (and runs
what else is swept on the same cadence: capture retention)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sidecar.errors import StorageFault
from sidecar.injection.owners import ChannelOwners
from sidecar.injection.state_config import ChannelStateConfig
from sidecar.live import Live
from sidecar.timing import now_us

log = logging.getLogger(__name__)


def sweep_once(owners: ChannelOwners, reset: Callable[[str], bool], ttl_s: float) -> int:
    """Reset every channel idle for longer than ``ttl_s``; the number dropped."""
    if ttl_s <= 0:
        return 0
    dropped = 0
    while True:
        idle = owners.idle_since(now_us() - int(ttl_s * 1_000_000))
        for channel_id in idle:
            reset(channel_id)
            owners.release(channel_id)
        dropped += len(idle)
        if len(idle) < 1000:
            break
    if dropped:
        log.info("idle channels dropped", extra={"channels": dropped, "ttl_s": ttl_s})
    return dropped


class ChannelSweeper:
    """A daemon thread running ``sweep_once`` every ``sweep_interval_s``."""

    def __init__(self, owners: ChannelOwners, reset: Callable[[str], bool],
                 config: Live[ChannelStateConfig],
                 also: Callable[[], object] | None = None) -> None:
        """``also``: run after each sweep (capture retention)."""
        self.owners, self.reset, self.config, self.also = owners, reset, config, also
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="channel-sweep", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.config.get().sweep_interval_s):
            try:
                sweep_once(self.owners, self.reset, self.config.get().channel_state_ttl)
                if self.also is not None:
                    self.also()
            except StorageFault:
                pass  # the disk refuses writes (logged where refused): the next sweep retries
            except Exception:
                log.exception("channel sweep failed")

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
