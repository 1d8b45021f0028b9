"""What every command talking to a running sidecar shares: ``--addr``, ``--token``, the
client, and progress bars on stderr."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from sidecar.api.server_config import DEFAULT_LISTEN
from sidecar.cli import args as types

if TYPE_CHECKING:  # the client (gRPC) is imported when a command connects, not to parse
    from memsidecar_client import Client

TOKEN_ENV = "MEMSIDECAR_TOKEN"


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--addr``, ``--token``, ``--timeout`` and ``--log-level``."""
    parser.add_argument("--addr", default=DEFAULT_LISTEN,
                        help=f"the sidecar: HOST:PORT or unix:PATH (default {DEFAULT_LISTEN})")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV, ""),
                        help=f"bearer token when [server.auth] is on (default ${TOKEN_ENV})")
    types.add_timeout(parser, 30.0, "each call may take")
    types.add_log_level(parser)


def connect(args: argparse.Namespace) -> Client:
    """A client whose reads are retried briefly: an unreachable sidecar fails in seconds."""
    from memsidecar_client import Client, RetryPolicy

    return Client(args.addr, token=args.token, timeout_s=args.timeout,
                  retry=RetryPolicy(max_attempts=2))


def progress(total: int | None, unit: str, enabled: bool) -> Any:
    """A progress bar on stderr with rate and ETA (tqdm) when ``enabled`` and stderr is a
    terminal; a no-op one otherwise (a log file or a pipe gets the summary line only)."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, file=sys.stderr,
                disable=not (enabled and sys.stderr.isatty()), dynamic_ncols=True,
                smoothing=0.1)


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress bar on stderr (there is none when stderr is not a "
                        "terminal)")
