"""Where the server listens decides what it requires: a non-loopback TCP address needs auth."""

from __future__ import annotations

import ipaddress
import logging

from sidecar.api.server_config import ServerConfig

log = logging.getLogger(__name__)


class InsecureListen(OSError):
    """A remote listen address without authentication (and no explicit opt-out)."""


def is_local(listen: str) -> bool:
    """True for a Unix socket or a loopback address (127.0.0.0/8, ::1, localhost)."""
    if listen.startswith("unix:") or listen.startswith("unix-abstract:"):
        return True
    host = listen.rsplit(":", 1)[0] if ":" in listen else listen
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name or a wildcard: reachable from elsewhere


def check_exposure(config: ServerConfig, listen: str, *, warn: bool = True) -> None:
    """Refuse a remote address without auth, unless ``allow_insecure_remote`` (then warn)."""
    if is_local(listen) or config.auth.enabled:
        return
    if not config.auth.allow_insecure_remote:
        raise InsecureListen(
            f"refusing to listen on {listen} without authentication: it is not a loopback "
            "address or a Unix socket. Set [server.auth] enabled = true (and add tokens with "
            "`memsidecar token add`), listen on 127.0.0.1 or a unix:// socket, or set "
            "[server.auth] allow_insecure_remote = true to accept the risk")
    if warn:
        log.warning("listening on a remote address without authentication: any host that "
                    "can reach it can read and change every memory", extra={"listen": listen})


def reflection_enabled(config: ServerConfig, listen: str) -> bool:
    if config.reflection == "auto":
        return is_local(listen)
    return config.reflection == "on"
