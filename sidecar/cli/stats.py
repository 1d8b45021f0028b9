"""``memsidecar stats``: the store's counts (VaultStats) as plain ``name value`` lines; with
[server.auth] on, the operator token.

Totals first, then one line per scope (read a page of scopes at a time). ``canon`` and
``registers`` count live memories of each tier; ``captured`` the live memories capture wrote
(also counted in ``live``); ``register_topics`` counts the distinct topics among those
registers (the ones a snapshot shows): a register written without a ``topic_id`` has none."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from sidecar.cli import remote

if TYPE_CHECKING:
    from memsidecar.v1 import vault_pb2

PER_SCOPE = ("live", "forgotten", "canon", "registers", "captured")
TIERS = ("canon", "registers")  # totals summed over the scopes
PAGE_SIZE = 1000  # scopes per VaultStats call
TOTALS = ("captured", "register_topics", "history_rows", "db_size_bytes",
          "max_memories_per_scope")


def add(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    remote.add_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with remote.connect(args) as client:
        show(client.vault_stats_pages(PAGE_SIZE), sys.stdout)
    return 0


def show(pages: Iterable[vault_pb2.VaultStatsResponse], out: TextIO) -> None:
    """``live 12`` ..., then ``scope <agent> live 3 forgotten 0 ...`` (``-`` = shared)."""
    first: vault_pb2.VaultStatsResponse | None = None
    tiers = dict.fromkeys(TIERS, 0)
    lines: list[str] = []  # the totals come first, summed over every page
    for page in pages:
        first = first or page
        for scope in page.scopes:
            for name in TIERS:
                tiers[name] += getattr(scope, name)
            counts = " ".join(f"{name} {getattr(scope, name)}" for name in PER_SCOPE)
            lines.append(f"scope {scope.agent_id or '-'} {counts}")
    if first is None:
        return
    print(f"live {first.live}\nforgotten {first.forgotten}", file=out)
    for name in TIERS:
        print(f"{name} {tiers[name]}", file=out)
    for name in TOTALS:
        print(f"{name} {getattr(first, name)}", file=out)
    for line in lines:
        print(line, file=out)
