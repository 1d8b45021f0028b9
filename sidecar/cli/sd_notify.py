"""Tell systemd (``Type=notify``) how the server is doing: one datagram to ``$NOTIFY_SOCKET``.

No-op when the variable is unset (not started by systemd, or not ``Type=notify``).
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)

READY = "READY=1"
STOPPING = "STOPPING=1"


def notify(state: str) -> bool:
    """Send ``state`` (e.g. ``READY=1``); True when it was sent."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as err:
        log.warning("sd_notify failed", extra={"state": state, "error": err.strerror})
        return False
    return True
