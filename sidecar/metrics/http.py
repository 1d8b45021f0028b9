"""The HTTP endpoint: ``GET /metrics`` in the Prometheus text format, on its own thread, and
the admin page (``sidecar.admin``) at every other path when given.

With a token store (``[server.auth] enabled``), a request must carry the operator token
(``Authorization: Bearer <token>``), else 401. The address is bound when the server is built:
a busy or invalid one is a start-up error (:class:`HttpListenError`), never a silent fallback.
What a client can hold (connections, time, bytes) is bounded by :mod:`sidecar.metrics.limits`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from sidecar.api.auth_interceptor import bearer
from sidecar.auth.tokens import TokenStore
from sidecar.listen import host_port
from sidecar.metrics import limits as limits_module
from sidecar.metrics.bounded import BoundedHandler, BoundedServer
from sidecar.metrics.limits import HttpLimits
from sidecar.metrics.refusals import Refusals

log = logging.getLogger(__name__)

PATH = "/metrics"

Allow = Callable[[str], bool]  # the Authorization header -> may scrape
Pages = Callable[[BoundedHandler, str, bytes], None]  # answers GET or POST (the admin page)


class HttpListenError(OSError):
    """The configured HTTP address cannot be bound (busy, invalid, not allowed)."""


class MetricsHttp:
    """A bound endpoint; ``start`` serves it on its own thread."""

    def __init__(self, server: BoundedServer) -> None:
        self.server = server
        self.port = int(server.server_address[1])
        self._thread = threading.Thread(target=server.serve_forever, name="metrics-http",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()
        log.info("metrics endpoint listening", extra={"port": self.port})

    def close(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
            self._thread.join()
        self.server.server_close()


def bind_http(listen: str, registry: CollectorRegistry,
              tokens: TokenStore | None, pages: Pages | None = None,
              limits: HttpLimits | None = None) -> MetricsHttp | None:
    """The endpoint bound to ``listen`` (HOST:PORT), not yet serving; None when off ("").
    Raises :class:`HttpListenError` (one line naming the address and the flag)."""
    if not listen:
        return None
    allow = _everyone if tokens is None else _operator(tokens)
    try:
        host, port = host_port(listen)
        server = BoundedServer((host.strip("[]"), port), _handler(registry, allow, pages),
                               limits or limits_module.LIMITS, Refusals())
    except (OSError, ValueError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else "not HOST:PORT"
        raise http_listen_error(listen, why) from None
    return MetricsHttp(server)


def http_listen_error(listen: str, why: str) -> HttpListenError:
    """The one-line refusal of an HTTP address that cannot be bound."""
    return HttpListenError(
        f"cannot serve the admin page and /metrics on {listen} ({why}): pass "
        "--http-listen HOST:PORT with a free port, or --http-listen '' to turn it off "
        "([server.http] listen)")


def _everyone(header: str) -> bool:
    return True


def _operator(tokens: TokenStore) -> Allow:
    def allow(header: str) -> bool:
        token = bearer((("authorization", header),))
        who = tokens.verify(token) if token else None
        return who is not None and who.operator

    return allow


def _handler(registry: CollectorRegistry, allow: Allow,
             pages: Pages | None) -> type[BoundedHandler]:
    class Handler(BoundedHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?", 1)[0] != PATH:
                if pages is not None:
                    pages(self, "GET", b"")
                else:
                    self.reply(404, b"not found: the metrics are at /metrics\n", "text/plain")
            elif not allow(self.headers.get("Authorization", "")):
                self.reply(401, b"the operator token is required: "
                           b"'Authorization: Bearer <token>'\n", "text/plain",
                           (("WWW-Authenticate", "Bearer"),))
            else:
                self.reply(200, generate_latest(registry), CONTENT_TYPE_LATEST)

        def do_POST(self) -> None:  # noqa: N802
            if pages is not None and self.path.split("?", 1)[0] != PATH:
                pages(self, "POST", self.read_body())
            else:
                self.reply(405, b"only the admin page takes POST\n", "text/plain")

    return Handler
