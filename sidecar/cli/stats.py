"""``memsidecar stats``: the store's counts (VaultStats) as plain ``name value`` lines; with
[server.auth] on, the operator token."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from sidecar.cli import remote

if TYPE_CHECKING:
    from memsidecar.v1 import vault_pb2

TOTALS = ("live", "forgotten", "history_rows", "db_size_bytes", "register_topics",
          "max_memories_per_scope", "captured")
PER_SCOPE = ("live", "forgotten", "canon", "registers", "captured")


def add(parser: argparse.ArgumentParser) -> None:
    remote.add_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with remote.connect(args) as client:
        show(client.vault_stats(), sys.stdout)
    return 0


def show(stats: vault_pb2.VaultStatsResponse, out: TextIO) -> None:
    """``live 12`` ..., then ``scope <agent> live 3 forgotten 0 ...`` (``-`` = shared)."""
    for name in TOTALS:
        print(f"{name} {getattr(stats, name)}", file=out)
    for scope in stats.scopes:
        counts = " ".join(f"{name} {getattr(scope, name)}" for name in PER_SCOPE)
        print(f"scope {scope.agent_id or '-'} {counts}", file=out)
