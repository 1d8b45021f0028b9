"""``memsidecar search "text" [--agent A] [--user U] [--mode hybrid|vector|lexical]``: the
hits, best first, each with its fused score, cosine and rank in every retrieval source."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from sidecar.cli import remote
from sidecar.cli.args import integer

if TYPE_CHECKING:
    from memsidecar.v1 import store_pb2

MODES = ("hybrid", "lexical", "vector")  # SearchMode without its SEARCH_MODE_ prefix
MAX_LIMIT = 1000  # SearchRequest.limit


def add(parser: argparse.ArgumentParser) -> None:
    remote.add_options(parser)
    parser.add_argument("text")
    parser.add_argument("--agent", default="", help="search as agent A (its own memories and "
                        "the shared ones; default shared only)")
    parser.add_argument("--user", default="", help="search as end user U of the agent (their "
                        "private memories too; default no user's)")
    parser.add_argument("--mode", choices=MODES, default="hybrid")
    parser.add_argument("--limit", type=integer(1, MAX_LIMIT), default=10,
                        help=f"hits to show, 1..{MAX_LIMIT} (default 10)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from memsidecar.v1 import store_pb2

    mode = store_pb2.SearchMode.Value(f"SEARCH_MODE_{args.mode.upper()}")
    with remote.connect(args) as client:
        reply = client.search(args.text, agent_id=args.agent, limit=args.limit, mode=mode,
                              user_id=args.user)
    show(reply, sys.stdout)
    return 0


def show(reply: store_pb2.SearchResponse, out: TextIO) -> None:
    from memsidecar_client.records import type_label

    if not reply.hits:
        print("no hits", file=out)
    for number, hit in enumerate(reply.hits, start=1):
        m = hit.memory
        print(f"{number}. [{type_label(m.type)}] {m.content}", file=out)
        print(f"   id {m.id}  score {hit.score:.4f}  cosine {hit.cosine:.3f}  "
              f"{source_ranks(hit.sources)}", file=out)


def source_ranks(sources: Any) -> str:
    """``vector #1, lexical #4, graph -``: each source's rank (``-`` when it did not list it)."""
    return ", ".join(f"{s.name} #{s.rank}" if s.rank else f"{s.name} -" for s in sources)
