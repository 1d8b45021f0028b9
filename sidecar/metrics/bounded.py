"""An HTTP server no client can exhaust: at most ``max_connections`` connections (a thread
each), every one closed after one request and held only for the deadlines of
:class:`~sidecar.metrics.limits.HttpLimits`; a malformed, oversized or slow request is answered
with a 4xx, counted in one rate-limited log line, never a traceback.

Subclasses answer with ``do_GET`` / ``do_POST`` and may raise :class:`Refused`; a POST reads its
body with :meth:`BoundedHandler.read_body`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from sidecar.metrics.deadline import DeadlineReader, TooLarge
from sidecar.metrics.limits import HttpLimits
from sidecar.metrics.refusals import Refusals

log = logging.getLogger(__name__)

_LENGTH = re.compile(r"[0-9]{1,19}", re.ASCII)
_BUSY_TEXT = b"busy: too many HTTP connections at once; retry\n"
BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
        b"Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s"
        % (len(_BUSY_TEXT), _BUSY_TEXT))


def _is_path(target: str) -> bool:
    try:
        urlsplit(target)
    except ValueError:  # "//[": an invalid IPv6 host
        return False
    return target.startswith("/")


class Refused(Exception):
    """Answer the request with ``status`` and ``reason`` (a fixed text of ours)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class BoundedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BoundedHandler],
                 limits: HttpLimits, refusals: Refusals) -> None:
        self.limits = limits
        self.refusals = refusals
        self.request_queue_size = limits.backlog
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._turn_away(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)  # closes the socket
        finally:
            self._slots.release()

    def _turn_away(self, request: socket.socket) -> None:
        """503 and close, on the accepting thread, without waiting for the client."""
        self.refusals.refused(503, "connection limit reached")
        request.setblocking(False)
        with contextlib.suppress(OSError):  # what has arrived: the close then sends FIN
            request.recv(self.limits.max_header_bytes)
        with contextlib.suppress(OSError):
            request.send(BUSY)
        self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection failing outside a request (a client resetting it): no traceback."""
        log.debug("http connection failed: %s", type(sys.exc_info()[1]).__name__)


class BoundedHandler(BaseHTTPRequestHandler):
    server: BoundedServer
    protocol_version = "HTTP/1.0"  # one request per connection
    server_version = "memsidecar"
    sys_version = ""

    def setup(self) -> None:
        limits = self.server.limits
        super().setup()
        self.connection.settimeout(limits.write_s)  # outside reads: bounds writes
        self.rfile.close()  # replaced: reads run against the deadline and the header budget
        self.reader = DeadlineReader(self.connection, time.monotonic() + limits.header_s,
                                     limits.max_header_bytes, limits.write_s)
        self.rfile = io.BufferedReader(self.reader)
        self.answered = False
        self.raw_requestline = b""

    def handle(self) -> None:
        self.close_connection = True
        try:
            self._serve()
        except Refused as refused:
            self._refuse(refused.status, refused.reason)
        except TimeoutError:
            self._refuse(408, "response not read within its deadline" if self.answered
                         else "request not received within its deadline")
        except TooLarge:
            self._refuse(431, "request line and headers too large")
        except OSError:
            return  # the client went away
        except Exception:
            log.exception("http request failed")
            self._refuse(500, "internal error")

    def _serve(self) -> None:
        limits = self.server.limits
        line = self.rfile.readline(limits.max_request_line + 1)
        if not line:
            return  # closed without a request
        self.raw_requestline = line
        if len(line) > limits.max_request_line:
            raise Refused(414, "request line too long")
        if not self.parse_request():
            if not self.answered:
                raise Refused(400, "blank request line")
            return
        if self.request_version == "HTTP/0.9":
            raise Refused(505, "HTTP/0.9 is not served")
        method = getattr(self, f"do_{self.command}", None)
        if method is None:
            raise Refused(501, "method not served")
        if not _is_path(self.path):
            raise Refused(400, "the request target must be a path")
        self.reader.budget = None  # a body is bounded by its Content-Length (read_body)
        self.reader.deadline = time.monotonic() + limits.body_s
        method()
        self.wfile.flush()

    def read_body(self) -> bytes:
        """The body, by its Content-Length (checked before reading), against the deadline."""
        if self.headers.get("Transfer-Encoding") is not None:
            raise Refused(501, "Transfer-Encoding is not served; send Content-Length")
        lengths = self.headers.get_all("Content-Length") or []
        if not lengths:
            return b""
        if len(lengths) > 1 or not _LENGTH.fullmatch(lengths[0].strip()):
            raise Refused(400, "Content-Length must be one number of bytes")
        size = int(lengths[0])
        if size > self.server.limits.max_body_bytes:
            raise Refused(413, f"body larger than {self.server.limits.max_body_bytes} bytes")
        body = self.rfile.read(size)
        if len(body) < size:
            raise Refused(400, "body shorter than its Content-Length")
        return body

    def reply(self, status: int, body: bytes, content_type: str,
              headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, status: int, reason: str) -> None:
        self.server.refusals.refused(status, reason)
        if self.answered:
            return  # a response is (partly) out: closing says the rest
        self.request_version = "HTTP/1.0"  # a status line even to an HTTP/0.9 request
        text = f"{status} {HTTPStatus(status).phrase}: {reason}\n".encode()
        try:
            self.reply(status, text, "text/plain; charset=utf-8",
                       (("X-Content-Type-Options", "nosniff"), ("Connection", "close")))
            self.wfile.flush()
        except OSError:
            pass

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """http.server's own refusals (bad request line, header syntax, version): their
        message may quote the client's bytes, so only the status is used."""
        raise Refused(int(code), HTTPStatus(code).phrase.lower())

    def send_response_only(self, code: int, message: str | None = None) -> None:
        self.answered = True
        super().send_response_only(code, message)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return  # requests are counted in metrics, not logged

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return
