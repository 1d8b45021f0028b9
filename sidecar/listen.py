"""Listen addresses as ``--listen``, ``--http-listen`` and ``[server]`` give them, checked
before anything binds: ``HOST:PORT`` (gRPC and HTTP) and ``unix:PATH``, ``unix:///PATH`` or
``unix-abstract:NAME`` (gRPC only).

gRPC alone is lenient in ways that surprise: ``127.0.0.1`` binds port 443, ``127.0.0.1:99999``
and ``127.0.0.1:-1`` bind some other port. Here a port is 0..65535, written in digits."""

from __future__ import annotations

import socket

UNIX_PREFIXES = ("unix:", "unix-abstract:")
MAX_PORT = 65_535


class BadListen(OSError):
    """A listen address that is not of a form the server binds."""


def host_port(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` split (an IPv6 host keeps its brackets); ValueError for any other form."""
    host, _, port = listen.rpartition(":")
    if not host or not (port.isascii() and port.isdigit()) or int(port) > MAX_PORT:
        raise ValueError(f"{listen!r} is not HOST:PORT with a port 0..{MAX_PORT}")
    return host, int(port)


def check_grpc_listen(listen: str) -> None:
    """Raise :class:`BadListen` unless ``listen`` is ``HOST:PORT`` or a Unix socket address."""
    prefix = next((p for p in UNIX_PREFIXES if listen.startswith(p)), None)
    if prefix is not None:
        if listen.removeprefix(prefix).removeprefix("//"):
            return
    else:
        try:
            host_port(listen)
            return
        except ValueError:
            pass
    raise BadListen(f"cannot listen on {listen!r}: expected HOST:PORT (port 0..{MAX_PORT}) or "
                    "unix:///path/to.sock (--listen, [server] listen)")


def check_http_listen(listen: str) -> None:
    """Raise :class:`BadListen` unless ``listen`` is ``HOST:PORT`` or "" (off)."""
    if not listen:
        return
    try:
        host_port(listen)
    except ValueError:
        raise BadListen(
            f"cannot serve the admin page and /metrics on {listen!r}: expected HOST:PORT "
            f"(port 0..{MAX_PORT}), or '' to turn them off (--http-listen, [server.http] "
            "listen)") from None


def bind_error(listen: str) -> OSError | None:
    """Why ``HOST:PORT`` cannot be listened on now: each address the host resolves to is bound
    (as gRPC binds, ``SO_REUSEADDR``) and closed at once; the error of the first when none
    binds, as gRPC then refuses to start. None when one binds, for port 0 (any free port) and
    for a Unix socket: the server's own bind decides those."""
    if listen.startswith(UNIX_PREFIXES):
        return None
    host, port = host_port(listen)
    if port == 0:
        return None
    try:
        found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except OSError as err:
        return err
    first: OSError | None = None
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
                return None
            except OSError as err:
                first = first or err
    return first


def grpc_listen_error(listen: str, why: str) -> OSError:
    """The one-line refusal of a gRPC address that cannot be bound."""
    return OSError(f"could not listen on {listen}: {why} (--listen, [server] listen)")
