"""``memsidecar stats``: the store's counts (VaultStats) as plain ``name value`` lines; with
[server.auth] on, the operator token."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from memsidecar.v1 import vault_pb2

from sidecar.cli import remote

TOTALS = ("live", "forgotten", "history_rows", "db_size_bytes", "register_topics",
          "max_memories_per_scope")
PER_SCOPE = ("live", "forgotten", "canon", "registers")


def add(sub: Any) -> None:
    parser = remote.add_parser(sub, "stats", "the store's counts as plain numbers")
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
