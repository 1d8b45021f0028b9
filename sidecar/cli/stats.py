"""``memsidecar stats``: the store's counts (VaultStats) as plain ``name value`` lines; with
[server.auth] on, the operator token.

Totals first, then one line per scope. ``canon`` and ``registers`` count live memories of
each tier; ``captured`` the live memories capture wrote (also counted in ``live``);
``register_topics`` counts the distinct topics among those registers (the ones a snapshot
shows): a register written without a ``topic_id`` has none."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from sidecar.cli import remote

if TYPE_CHECKING:
    from memsidecar.v1 import vault_pb2

PER_SCOPE = ("live", "forgotten", "canon", "registers", "captured")
TIERS = ("canon", "registers")  # totals summed over the scopes
TOTALS = ("captured", "register_topics", "history_rows", "db_size_bytes",
          "max_memories_per_scope")


def add(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    remote.add_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with remote.connect(args) as client:
        show(client.vault_stats(), sys.stdout)
    return 0


def show(stats: vault_pb2.VaultStatsResponse, out: TextIO) -> None:
    """``live 12`` ..., then ``scope <agent> live 3 forgotten 0 ...`` (``-`` = shared)."""
    print(f"live {stats.live}\nforgotten {stats.forgotten}", file=out)
    for name in TIERS:
        print(f"{name} {sum(getattr(scope, name) for scope in stats.scopes)}", file=out)
    for name in TOTALS:
        print(f"{name} {getattr(stats, name)}", file=out)
    for scope in stats.scopes:
        counts = " ".join(f"{name} {getattr(scope, name)}" for name in PER_SCOPE)
        print(f"scope {scope.agent_id or '-'} {counts}", file=out)
