"""Writes the disk refuses: a full or unwritable data dir is an answer, not an internal error.

``refusal`` turns an errno (ENOSPC, EDQUOT: full; EROFS, EACCES, EPERM: not writable) into the
domain error that names the path and what to do. ``DiskFaults`` records each refusal: counted
by reason, one log line per reason a minute (no traceback), and whether the data dir refuses
writes right now (``current``, for health), until a write succeeds again. Listeners hear each
change of that state; ``watch`` tries a probe write every few seconds meanwhile, so the state
clears when space is freed even if no client writes.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from sidecar.errors import DiskFull, NotWritable, StorageFault

log = logging.getLogger(__name__)

FULL = DiskFull.default_reason
NOT_WRITABLE = NotWritable.default_reason
REASONS = (FULL, NOT_WRITABLE)
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
NOT_WRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
LOG_EVERY_S = 60.0  # at most one "writes refused" line per reason in this time
PROBE_EVERY_S = 2.0


RESUME = "writes resume by themselves, reads keep being served"


def full(path: Path | str, then: str = RESUME) -> DiskFull:
    return DiskFull(
        f"the file system holding {path} is full: the write was refused. Free space there "
        f"(or move the data dir to a larger disk); {then}", path=str(path))


def not_writable(path: Path | str, why: str, then: str = RESUME) -> NotWritable:
    return NotWritable(
        f"{path} is not writable ({why}): the write was refused. Make the data dir writable "
        f"by the sidecar's user (remount it read-write, fix its owner or mode); {then}",
        path=str(path))


def refusal(code: int | None, path: Path | str, why: str = "") -> StorageFault | None:
    """The fault an errno means for a write to ``path``; None for any other error."""
    if code in FULL_ERRNOS:
        return full(path)
    if code in NOT_WRITABLE_ERRNOS:
        return not_writable(path, why or os.strerror(code or 0))
    return None


def os_refusal(err: OSError, path: Path | str | None = None) -> StorageFault | None:
    return refusal(err.errno, path or err.filename or "the data dir", err.strerror or "")


Listener = Callable[[StorageFault | None], None]


class DiskFaults:
    """The refusals of one data dir (shared by its database, config file and index files)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.counts: Counter[str] = Counter({reason: 0 for reason in REASONS})
        self.current: StorageFault | None = None  # writes are refused now: the latest fault
        self.listeners: list[Listener] = []  # hear each change of ``current``
        self.on_refusal: list[Callable[[str], None]] = []  # hear each refusal's reason
        self.probe: Callable[[], None] | None = None  # a write that changes nothing
        self._clock = clock
        self._lock = threading.Lock()
        self._logged_at: dict[str, float] = {}
        self._unlogged: Counter[str] = Counter()
        self._announced = False  # a "refused" line was logged since writes last worked
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refused(self, fault: StorageFault, counted: bool = True) -> StorageFault:
        """Count ``fault`` and return it (to be raised); logs at most one line a minute.
        ``counted=False``: a probe's (no write was asked for), only the state changes."""
        reason = fault.reason
        due = False
        with self._lock:
            changed = self.current is None or self.current.reason != fault.reason
            self.current = fault
            self._announced |= not counted  # the caller says it
            if counted:
                self.counts[reason] += 1
                self._unlogged[reason] += 1
                now = self._clock()
                due = now - self._logged_at.get(reason, -LOG_EVERY_S) >= LOG_EVERY_S
                if due:
                    self._logged_at[reason] = now
                    self._announced = True
                    refused = self._unlogged.pop(reason)
        if counted:
            for count in list(self.on_refusal):
                count(reason)
        if due:
            log.warning("write refused: %s", fault.message,
                        extra={"reason": reason, "path": fault.path, "refused": refused})
        if changed:
            self._notify(fault)
        return fault

    def accepted(self) -> None:
        """A write succeeded: the data dir takes writes again."""
        if self.current is None:
            return
        with self._lock:
            fault, self.current = self.current, None
            announced, self._announced = self._announced, False
        if fault is None:
            return
        if announced:
            log.info("writes accepted again", extra={"path": fault.path})
        self._notify(None)

    def _notify(self, fault: StorageFault | None) -> None:
        for listener in list(self.listeners):
            listener(fault)

    # -- probing while writes are refused ----------------------------------------------------

    def watch(self, every_s: float = PROBE_EVERY_S) -> None:
        """Probe every ``every_s`` while writes are refused (a daemon thread)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(every_s,),
                                            name="disk-probe", daemon=True)
            self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            if self.current is not None and self.probe is not None:
                self.try_probe()

    def try_probe(self) -> bool:
        """Run the probe; True (and the state cleared) when it wrote."""
        if self.probe is None:
            return False
        try:
            self.probe()
        except StorageFault:
            return False
        except Exception as err:  # noqa: BLE001 - a probe never stops the watcher
            log.warning("disk probe failed", extra={"error": str(err)})
            return False
        self.accepted()
        return True

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
