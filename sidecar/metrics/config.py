"""``[server.http]``: the HTTP endpoint serving the admin page and ``/metrics``."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.knobs import knob

DEFAULT_HTTP_LISTEN = "127.0.0.1:9464"


@dataclass(frozen=True, slots=True)
class HttpConfig:
    listen: str = field(default=DEFAULT_HTTP_LISTEN, metadata=knob(
        "HOST:PORT of the HTTP endpoint serving the admin page at / and Prometheus metrics at "
        "/metrics (with [server.auth] on, the operator token is required); \"\" turns it off. "
        "`memsidecar serve --http-listen` overrides it. A port that cannot be bound stops the "
        "start (exit 2).", restart=True))
    admin: bool = field(default=True, metadata=knob(
        "Serve the admin web page at / on the same port (with [server.auth] on, it asks for "
        "the operator token).", restart=True))
    metrics_agents: int = field(default=20, metadata=knob(
        "Agents with memsidecar_memories series of their own at /metrics: the ones with the "
        "most live memories; every other agent's are summed under agent=\"(other)\" (the "
        "shared scope always has its own). Bounds the scrape whatever the number of agents.",
        ge=0, le=10_000, restart=True))
