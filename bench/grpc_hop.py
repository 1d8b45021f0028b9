"""What a gRPC round trip costs on this machine when the handler takes as long as an Inject.

A stand-in MemoryInjection server (a separate process, sync ``grpc.server`` or ``grpc.aio``)
whose Inject busy-waits ``--handler-ms`` and returns its start and end timestamps; the client
busy-waits ``--gap-ms`` between calls (as the replay's bare embedding does) and splits each
call into the request leg (client send -> handler start) and the response leg (handler end ->
client return). CLOCK_MONOTONIC is shared by the two processes.

Run:  .venv/bin/python -m bench.grpc_hop [--handler-ms 15] [--gap-ms 13] [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time

import grpc
import numpy as np
from memsidecar.v1 import injection_pb2, injection_pb2_grpc


def busy(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


def reply(handler_ms: float) -> injection_pb2.InjectResponse:
    start = time.perf_counter()
    busy(handler_ms)
    return injection_pb2.InjectResponse(skip_reason=f"{start} {time.perf_counter()}")


def serve(kind: str, port: int, handler_ms: float) -> None:
    class Sync(injection_pb2_grpc.MemoryInjectionServicer):
        def Inject(self, request: object, context: object) -> injection_pb2.InjectResponse:
            return reply(handler_ms)

    class Aio(injection_pb2_grpc.MemoryInjectionServicer):
        async def Inject(self, request: object,
                         context: object) -> injection_pb2.InjectResponse:
            return reply(handler_ms)  # inline: no hand-off to a thread

    if kind == "sync":
        from concurrent import futures
        server = grpc.server(futures.ThreadPoolExecutor(8))
        injection_pb2_grpc.add_MemoryInjectionServicer_to_server(Sync(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        server.wait_for_termination()
        return

    async def main() -> None:
        server = grpc.aio.server()
        injection_pb2_grpc.add_MemoryInjectionServicer_to_server(Aio(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    asyncio.run(main())


def measure(port: int, calls: int, gap_ms: float) -> tuple[list[float], list[float]]:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(channel).result(timeout=30)
    inject = injection_pb2_grpc.MemoryInjectionStub(channel).Inject
    request = injection_pb2.InjectRequest(agent_id="a", channel_id="c", text="hello " * 50)
    request_leg, response_leg = [], []
    for _ in range(calls):
        busy(gap_ms)
        sent = time.perf_counter()
        out = inject(request)
        back = time.perf_counter()
        start, end = map(float, out.skip_reason.split())
        request_leg.append((start - sent) * 1000)
        response_leg.append((back - end) * 1000)
    channel.close()
    return request_leg, response_leg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--handler-ms", type=float, default=15.0)
    parser.add_argument("--gap-ms", type=float, default=13.0)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--serve", choices=("sync", "aio"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.handler_ms)
        return
    print("| server | gap ms | handler ms | request leg p50 / p99 | response leg p50 / p99 | "
          "hop p50 / p99 |\n|---|---|---|---|---|---|")
    for kind in ("sync", "aio"):
        for gap in (0.0, args.gap_ms):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = int(sock.getsockname()[1])
            proc = subprocess.Popen([sys.executable, "-m", "bench.grpc_hop", "--serve", kind,
                                     "--port", str(port), "--handler-ms",
                                     str(args.handler_ms)])
            try:
                req, resp = measure(port, args.calls, gap)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            hop = np.array(req) + np.array(resp)
            print(f"| {kind} | {gap:g} | {args.handler_ms:g} | "
                  + " | ".join(f"{np.percentile(v, 50):.2f} / {np.percentile(v, 99):.2f}"
                               for v in (req, resp, hop)) + " |", flush=True)


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("grpc_hop"):
        main()
