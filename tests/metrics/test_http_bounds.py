"""The HTTP endpoint under malformed, oversized, slow and too many requests, over raw sockets
to a real sidecar: each gets a 4xx (a 408 and a close when too slow), never a traceback."""

from __future__ import annotations

import errno
import logging
import re
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sidecar.api.server import HTTP_HEALTH, create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.metrics import limits
from sidecar.metrics.bounded import BoundedHandler, BoundedServer
from sidecar.metrics.config import HttpConfig
from sidecar.metrics.limits import HttpLimits
from sidecar.metrics.refusals import Refusals
from tests.conftest import Running
from tests.waiting import wait_for

SHORT = HttpLimits(header_s=1.0, body_s=1.0, write_s=2.0)
READ_S = 60.0  # a client's patience; the server's own deadlines end every case long before


def start(config: ServerConfig, embedder: Embedder) -> tuple[Running, int]:
    config = replace(config, listen="127.0.0.1:0", http=HttpConfig(listen="127.0.0.1:0"))
    server = create_server(App.open(config, embedder=embedder))
    server.start()
    assert server.http is not None
    return Running(server), server.http.port


@pytest.fixture
def short(config: ServerConfig, embedder: Embedder,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A sidecar whose HTTP deadlines are a second (the port)."""
    monkeypatch.setattr(limits, "LIMITS", SHORT)
    live, port = start(config, embedder)
    yield port
    live.close()


@pytest.fixture(autouse=True)
def no_traceback(caplog: pytest.LogCaptureFixture,
                 capfd: pytest.CaptureFixture[str]) -> Iterator[None]:
    """Whatever a test sends, neither the log nor stderr shows a traceback."""
    with caplog.at_level(logging.DEBUG):
        yield
    err = capfd.readouterr().err
    assert "Traceback" not in caplog.text and "Traceback" not in err, caplog.text + err
    assert not [r for r in caplog.records if r.exc_info]


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=READ_S)
    return sock


def until_closed(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection."""
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    sock.close()
    return out


def status(reply: bytes) -> int:
    found = re.match(rb"HTTP/1\.[01] (\d{3}) ", reply)
    assert found is not None, reply[:200]
    return int(found.group(1))


def exchange(port: int, data: bytes, shut: bool = False) -> int:
    """The status answering ``data``, sent at once (``shut``: then end the sending side)."""
    sock = connect(port)
    sock.sendall(data)
    if shut:
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError as err:  # the server answered and closed first: its answer is read
            if err.errno != errno.ENOTCONN:
                raise
    return status(until_closed(sock))


def post(path: str, body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"{head}\r\n").encode() + body


FORM = b"token=x&csrf=y"
LENGTHS = ["-1", "x", "1e3", "+5", "0x10", "", " 1 2", "12abc", "١٢", "99999999999999999999999"]


@pytest.mark.parametrize("length", LENGTHS)
def test_a_content_length_that_is_not_a_number_is_400_before_reading(
        short: int, length: str) -> None:
    """The body never ends (the socket stays open): an answer before the deadline shows the
    server did not wait for it."""
    sock = connect(short)
    sock.sendall(post("/login", b"token=" + b"a" * 10_000, f"Content-Length: {length}"))
    assert status(until_closed(sock)) == 400


def test_length_checks(short: int) -> None:
    assert exchange(short, post("/login", FORM, "Content-Length: 14", "Content-Length: 14")) \
        == 400
    assert exchange(short, post("/login", b"", "Content-Length: 100000000")) == 413
    assert exchange(short, post("/login", b"", "Transfer-Encoding: chunked")
                    + b"5\r\nhello\r\n0\r\n\r\n") == 501
    assert exchange(short, post("/login", FORM[:5], "Content-Length: 14"), shut=True) == 400
    assert exchange(short, post("/metrics", FORM, "Content-Length: -1")) == 405


def test_a_body_slower_than_its_deadline_is_408_and_closed(short: int) -> None:
    sock = connect(short)
    sock.sendall(post("/settings/update", b"csrf=", "Content-Length: 1000"))
    drip = Drip(sock, b"a" * 1000)
    assert status(until_closed(sock)) == 408
    drip.stop()


def test_slowloris_headers_and_idle_connections_are_408_and_closed(short: int) -> None:
    idle = connect(short)
    slow = connect(short)
    slow.sendall(b"GET / HTTP/1.1\r\n")
    drip = Drip(slow, b"X-Slow: " + b"a" * 10_000)
    assert status(until_closed(slow)) == 408
    assert status(until_closed(idle)) == 408
    drip.stop()
    assert drip.sent < 10_000


class Drip:
    """Sends ``data`` a byte every 50 ms on its own thread until the server closes."""

    def __init__(self, sock: socket.socket, data: bytes) -> None:
        self.sock, self.data, self.sent = sock, data, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for byte in self.data:
            if self._stop.wait(0.05):
                return
            try:
                self.sock.send(bytes([byte]))
            except OSError:
                return
            self.sent += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


BAD_LINES = {
    b"GET /\r\n": 505,  # HTTP/0.9
    b"POST /\r\n": 400,
    b"GET\r\n\r\n": 400,
    b"\r\n": 400,
    b"GET / HTTP/2.0\r\n\r\n": 505,
    b"GET / FOO/1.0\r\n\r\n": 400,
    b"GET / HTTP/1.1 extra\r\n\r\n": 400,
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)): 400,  # TLS hello
    b"BREW / HTTP/1.1\r\n\r\n": 501,
    b"HEAD / HTTP/1.1\r\n\r\n": 501,
    b"GET //[ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n": 404,  # read as /[
    b"GET http://127.0.0.1/ HTTP/1.1\r\n\r\n": 400,
    b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n": 414,
    b"GET / HTTP/1.1\r\n" + b"X-A: b\r\n" * 101 + b"\r\n": 431,
    b"GET / HTTP/1.1\r\n" + (b"X-Big: " + b"a" * 1000 + b"\r\n") * 20 + b"\r\n": 431,
    b"GET / HTTP/1.1\r\nX-Huge: " + b"a" * 70_000 + b"\r\n\r\n": 431,
}


@pytest.mark.parametrize("line", list(BAD_LINES), ids=lambda b: repr(b[:24]))
def test_malformed_request_lines_and_headers(short: int, line: bytes) -> None:
    assert exchange(short, line, shut=True) == BAD_LINES[line]


def form_token(port: int) -> str:
    sock = connect(port)
    sock.sendall(b"GET /settings HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    found = re.search(rb'name="csrf" value="([^"]+)"', until_closed(sock))
    assert found is not None
    return found.group(1).decode()


def test_hostile_form_and_query_values(short: int) -> None:
    csrf = form_token(short).encode()

    def form(path: str, body: bytes) -> int:
        return exchange(short, post(path, body, f"Content-Length: {len(body)}"))

    for body in (b"csrf=%C3%A9", b"csrf=\xff\xfe", b"csrf=%ZZ&%%%=1&=&&", b"csrf=%00",
                 b"csrf=" + "é".encode() * 40, b"\x00\x01\x02", b"csrf=%ED%A0%80"):
        assert form("/settings/update", body) == 403
    for body in (b"agent=%C3%A9&max_total=1", b"agent=%ZZ&max_total=%ff", b"agent=\xff",
                 b"agent=a%00b&max_total=2"):
        assert form("/settings/update", b"csrf=" + csrf + b"&" + body) in (303, 400)
    for query in (b"/memories?agent=%zz%C3", b"/search?q=%ED%A0%80", b"/%", b"/memory?id=\xff",
                  b"/memories?type=%C3%A9&tier=\x01", b"/settings?agent=%C3%A9"):
        code = exchange(short, b"GET " + query + b" HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        assert code in (200, 400, 404), query
    for head in (b"Host: \xc3\xa9", b"Cookie: memsidecar_admin=\xff\xfe; a", b"Origin: \xff"):
        code = exchange(short, b"GET / HTTP/1.0\r\n" + head + b"\r\n\r\n")
        assert code in (200, 421), head


def test_one_rate_limited_line_for_many_refusals(caplog: pytest.LogCaptureFixture) -> None:
    clock = [100.0]
    refusals = Refusals(every_s=60, clock=lambda: clock[0])
    for _ in range(5):
        refusals.refused(400, "blank request line")
    clock[0] += 60
    refusals.refused(408, "request not received within its deadline")
    lines = [r.getMessage() for r in caplog.records if "http requests refused" in r.getMessage()]
    assert lines == [
        "http requests refused: 1 since the previous such line, the last 400 blank request line",
        "http requests refused: 5 since the previous such line, the last 408 request not "
        "received within its deadline"]
    assert refusals.total == 6


def test_half_open_connections_are_bounded_closed_and_grpc_answers(
        config: ServerConfig, embedder: Embedder) -> None:
    """The shipped limits: 300 connections sending ``GET / HTTP/1.1`` and nothing more hold
    at most ``max_connections`` threads, are all answered (503 at once beyond the limit, 408
    at the header deadline) and closed, while gRPC health answers."""
    live, port = start(config, embedder)
    try:
        peak = Peak()
        held = []
        for _ in range(300):
            sock = connect(port)
            sock.sendall(b"GET / HTTP/1.1\r\n")
            held.append(sock)
        health = health_pb2_grpc.HealthStub(live.channel)
        for service in ("", HTTP_HEALTH):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        statuses = Counter(status(until_closed(sock)) for sock in held)
        assert set(statuses) == {503, 408}, statuses
        assert statuses[408] >= limits.LIMITS.max_connections
        wait_for(lambda: handler_threads() == 0)
        peak.stop()
        assert limits.LIMITS.max_connections / 2 <= peak.threads <= limits.LIMITS.max_connections
        assert exchange(port, b"GET /metrics HTTP/1.0\r\n\r\n") == 200
    finally:
        live.close()


def handler_threads() -> int:
    """Threads serving an HTTP connection (socketserver names them by their target)."""
    return sum("process_request_thread" in t.name for t in threading.enumerate())


class Peak:
    """The most HTTP handler threads running at once, sampled every 10 ms until ``stop``."""

    def __init__(self) -> None:
        self.threads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.threads = max(self.threads, handler_threads())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def test_a_client_that_does_not_read_the_reply_is_dropped_at_the_write_deadline() -> None:
    """A 64 MiB reply to a client that reads nothing: the server gives up after ``write_s``
    (its thread ends) instead of waiting for ever."""

    class Big(BoundedHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.reply(200, bytes(64 << 20), "application/octet-stream")

    server = BoundedServer(("127.0.0.1", 0), Big, SHORT, Refusals())
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(server.server_address)
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        wait_for(lambda: server.refusals.total == 1)  # counted when the write gave up
        wait_for(lambda: handler_threads() == 0)
        sock.close()
    finally:
        server.shutdown()
        server.server_close()
