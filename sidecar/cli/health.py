"""``memsidecar health``: one gRPC health check; exit 0 when SERVING, 1 otherwise.

For readiness probes and scripts: ``memsidecar health --addr 127.0.0.1:50051``. Health checks
need no token, even with [server.auth] on. Prints the status (or why there is none) on one line.
"""

from __future__ import annotations

import argparse
import sys

from sidecar.api.server_config import DEFAULT_LISTEN
from sidecar.cli import args as types

SERVING, NOT_SERVING, UNREACHABLE = 0, 1, 2


def add(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.add_argument("--addr", default=DEFAULT_LISTEN,
                        help=f"HOST:PORT or unix:PATH (default {DEFAULT_LISTEN})")
    types.add_timeout(parser, 5.0, "to wait for the answer")
    parser.add_argument("--service", default="",
                        help="a service name (default: the server as a whole)")
    types.add_log_level(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    request = health_pb2.HealthCheckRequest(service=args.service)
    with grpc.insecure_channel(args.addr) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(request, timeout=args.timeout)
        except grpc.RpcError as err:
            print(f"{args.addr}: {err.code().name}", file=sys.stderr)
            return UNREACHABLE
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"{args.addr}: {status}")
    return SERVING if reply.status == health_pb2.HealthCheckResponse.SERVING else NOT_SERVING
