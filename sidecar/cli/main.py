"""Command line.

On this machine: ``memsidecar serve [--config FILE] [--listen ADDR] [--data-dir DIR]
[--log-format text|json]``, ``memsidecar config check FILE``, ``memsidecar config docs``,
``memsidecar token add|list|revoke --data-dir DIR``.

Against a running sidecar (``--addr HOST:PORT|unix:PATH``, ``--token T``):
``memsidecar import FILE.jsonl|-``, ``memsidecar export [--agent A]``,
``memsidecar search TEXT``, ``memsidecar inject --channel C TEXT``, ``memsidecar stats``."""

from __future__ import annotations

import argparse
import sys

from memsidecar_client import MemsidecarError

from sidecar.cli import export, importing, inject, local, logs, search, serve, stats
from sidecar.errors import DomainError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memsidecar", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    serve.add(sub)
    local.add_config(sub)
    local.add_token(sub)
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
