"""``[server.http]``: the HTTP endpoint serving ``/metrics``."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.knobs import knob

DEFAULT_HTTP_LISTEN = "127.0.0.1:9464"


@dataclass(frozen=True, slots=True)
class HttpConfig:
    listen: str = field(default=DEFAULT_HTTP_LISTEN, metadata=knob(
        "HOST:PORT of the HTTP endpoint serving Prometheus metrics at /metrics (with "
        "[server.auth] on, the operator token is required); \"\" turns it off. When the port "
        "is busy the sidecar serves gRPC without it and logs a WARNING.", restart=True))
    admin: bool = field(default=True, metadata=knob(
        "Serve the admin web page at / on the same port (with [server.auth] on, it asks for "
        "the operator token).", restart=True))
