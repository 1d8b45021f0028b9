"""A socket read against a deadline and a byte budget, not a per-read timeout.

A per-read timeout lets a client that sends one byte every few seconds hold a connection for
ever; here every read waits only for what is left of the deadline, and the header phase may
read only so many bytes in total.
"""

from __future__ import annotations

import io
import socket
import time


class TooLarge(Exception):
    """The reader's byte budget is spent (request line and headers larger than allowed)."""


class DeadlineReader(io.RawIOBase):
    """The raw stream under a connection's ``rfile``: ``deadline`` (monotonic) and ``budget``
    (bytes still allowed; None: no limit) may be moved between the phases of a request."""

    def __init__(self, sock: socket.socket, deadline: float, budget: int | None,
                 write_timeout_s: float) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = deadline
        self.budget = budget
        self.write_timeout_s = write_timeout_s  # the socket's timeout between reads

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.budget is not None and self.budget <= 0:
            raise TooLarge
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        view = memoryview(buffer).cast("B")
        if self.budget is not None:
            view = view[:self.budget]
        self.sock.settimeout(left)
        try:
            count = self.sock.recv_into(view)
        finally:
            self.sock.settimeout(self.write_timeout_s)
        if self.budget is not None:
            self.budget -= count
        return count
