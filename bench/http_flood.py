"""Can idle HTTP connections starve the gRPC side? A real ``serve`` process under an
open-files limit (``--nofile``, default 1,024: the common default) is sent ``--connections``
HTTP connections (``--rate`` a second) that send ``GET / HTTP/1.1`` and nothing more.

At each of ``--at`` seconds after the flood: the server's threads and open file descriptors
(from /proc), what the connections got so far (a status, closed, or still open), and a gRPC
health check on a new connection. ``--root`` serves another checkout (before/after).

Run:  .venv/bin/python -m bench.http_flood [--connections 1000] [--rate 200] [--nofile 1024]
      [--at 1 10 60] [--root DIR]
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import resource
import select
import socket
import tempfile
import time
from collections import Counter
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.overload import free_port, serve
from bench.results import ROOT, recorded

LINE = b"GET / HTTP/1.1\r\n"
CONNECT_S = 5.0


class Flood:
    """Non-blocking connections (a full accept queue must not stall the others)."""

    def __init__(self, port: int, count: int, rate: float) -> None:
        self.state: dict[socket.socket, str] = {}
        began = time.monotonic()
        for i in range(count):
            time.sleep(max(0.0, began + i / rate - time.monotonic()))
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            self.state[sock] = "connecting"
        self._send_when_connected()

    def _send_when_connected(self) -> None:
        poller = select.poll()
        by_fd = {sock.fileno(): sock for sock in self.state}
        for fd in by_fd:
            poller.register(fd, select.POLLOUT)
        until = time.monotonic() + CONNECT_S
        while by_fd and time.monotonic() < until:
            for fd, _ in poller.poll(100):
                poller.unregister(fd)
                sock = by_fd.pop(fd)
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    self.state[sock] = "refused"
                    continue
                try:
                    sock.send(LINE)
                    self.state[sock] = "open"
                except OSError:
                    self.state[sock] = "reset"

    def poll(self) -> Counter[str]:
        for sock, state in self.state.items():
            if state != "open":
                continue
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                continue
            except OSError as err:
                self.state[sock] = "reset" if err.errno == errno.ECONNRESET else "error"
                continue
            found = re.match(rb"HTTP/1\.[01] (\d{3})", data)
            self.state[sock] = found.group(1).decode() if found else "closed"
        return Counter(self.state.values())

    def close(self) -> None:
        for sock in self.state:
            sock.close()


def health(port: int) -> str:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                          timeout=5)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
    except grpc.RpcError as err:
        return str(err.code().name)
    finally:
        channel.close()


def held(pid: int) -> tuple[int, int]:
    """(threads, open file descriptors) of the process."""
    status = Path(f"/proc/{pid}/status").read_text()
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200, help="connections opened a second")
    parser.add_argument("--nofile", type=int, default=1024)
    parser.add_argument("--at", type=float, nargs="+", default=[1, 10, 60])
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this client's own sockets
    with tempfile.TemporaryDirectory() as tmp, recorded("http_flood"):
        http = free_port()
        proc, port = serve(Path(tmp) / "data", args.root, http)
        try:
            resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (args.nofile, args.nofile))
            threads, fds = held(proc.pid)
            print(f"root: {args.root}; {args.connections} connections sending {LINE!r} "
                  f"({args.rate:g} a second); server open-files limit {args.nofile}; seconds "
                  "counted from the last connection")
            print("| seconds after | server threads | server fds | connections | gRPC health |")
            print("|---|---|---|---|---|")
            print(f"| before | {threads} | {fds} | | {health(port)} |")
            flood = Flood(http, args.connections, args.rate)
            began = time.monotonic()
            for at in args.at:
                time.sleep(max(0.0, began + at - time.monotonic()))
                threads, fds = held(proc.pid)
                got = ", ".join(f"{k} {v}" for k, v in sorted(flood.poll().items()))
                print(f"| {at:g} | {threads} | {fds} | {got} | {health(port)} |")
            flood.close()
        finally:
            proc.terminate()
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
