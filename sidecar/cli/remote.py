"""What every command talking to a running sidecar shares: ``--addr``, ``--token``, the
client, and progress bars on stderr."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from memsidecar_client import Client, RetryPolicy

from sidecar.api.server_config import DEFAULT_LISTEN

TOKEN_ENV = "MEMSIDECAR_TOKEN"
RETRY = RetryPolicy(max_attempts=2)


def add_parser(sub: Any, name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002
    """A subcommand with ``--addr``, ``--token``, ``--timeout`` and ``--log-level``."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help)
    parser.add_argument("--addr", default=DEFAULT_LISTEN,
                        help=f"the sidecar: HOST:PORT or unix:PATH (default {DEFAULT_LISTEN})")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV, ""),
                        help=f"bearer token when [server.auth] is on (default ${TOKEN_ENV})")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds each call may take (default 30)")
    parser.add_argument("--log-level", default="WARNING")
    return parser


def connect(args: argparse.Namespace) -> Client:
    """A client whose reads are retried briefly: an unreachable sidecar fails in seconds."""
    return Client(args.addr, token=args.token, timeout_s=args.timeout, retry=RETRY)


def progress(total: int | None, unit: str, enabled: bool) -> Any:
    """A progress bar on stderr with rate and ETA (tqdm); a no-op one when not ``enabled``."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, file=sys.stderr, disable=not enabled,
                dynamic_ncols=True, smoothing=0.1)


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress bar on stderr")
