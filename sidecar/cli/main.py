"""memsidecar: the sidecar and the tools around it.

On this machine: serve, health [--addr] [--timeout], config check|docs, token add|list|revoke,
migrate --from sqlite:PATH|postgres:DSN --to ... [--append].
Against a running sidecar (--addr HOST:PORT|unix:PATH, --token T after the command name):
import FILE.jsonl|-, export [--agent A], search TEXT, inject --channel C TEXT, stats.
"""

from __future__ import annotations

import argparse
import sys

from memsidecar_client import MemsidecarError

from sidecar.cli import (
    export,
    health,
    importing,
    inject,
    local,
    logs,
    migrate,
    search,
    serve,
    stats,
    version,
)
from sidecar.errors import DomainError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memsidecar", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    version.add(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    serve.add(sub)
    health.add(sub)
    local.add_config(sub)
    local.add_token(sub)
    migrate.add(sub)
    for command in (importing, export, search, inject, stats):
        command.add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logs.configure(args.log_level, getattr(args, "log_format", "text"))
    try:
        return int(args.run(args))
    except (DomainError, MemsidecarError) as err:
        print(f"memsidecar {args.command}: {getattr(err, 'message', err)}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"memsidecar {args.command}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"memsidecar {args.command}: interrupted", file=sys.stderr)
        return 130
