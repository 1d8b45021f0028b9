"""``memsidecar export [--agent A] [--user U] > FILE.jsonl``: every memory, forgotten ones
included, one JSON object per line in the order they were first stored (each with its
``user_id``); ``memsidecar import`` of the file into an empty store reproduces them. With
``--user``: only end user U's memories (what the sidecar keeps about them)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from sidecar.cli import remote
from sidecar.story import plural

if TYPE_CHECKING:
    from memsidecar_client import Client

PAGE = 1000


def add(parser: argparse.ArgumentParser) -> None:
    remote.add_options(parser)
    parser.add_argument("--agent", default=None,
                        help="only what agent A sees (its own memories and the shared ones); "
                        "default every agent's and the shared ones (with [server.auth] on, "
                        "that needs the operator token)")
    parser.add_argument("--user", default="", help="only end user U's memories")
    remote.add_progress_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from memsidecar.v1 import store_pb2
    from memsidecar_client import memory_to_dict

    every = args.agent is None
    with remote.connect(args) as client:
        total = None if args.user else _total(client, args.agent)
        with remote.progress(total, "mem", args.progress) as bar:
            written = forgotten = 0
            for memory in client.iter_memories(
                    agent_id=args.agent or "", all_agents=every, include_forgotten=True,
                    sort=store_pb2.SORT_ORDER_STORED, page_size=PAGE, user_id=args.user):
                sys.stdout.write(json.dumps(memory_to_dict(memory), ensure_ascii=False) + "\n")
                written += 1
                forgotten += memory.forgotten
                bar.update(1)
    sys.stdout.flush()
    print(f"{plural(written, 'memory', 'memories')} exported ({forgotten} forgotten)",
          file=sys.stderr)
    return 0


def _total(client: Client, agent: str | None) -> int | None:
    """How many memories the export will write, for the ETA; None when VaultStats is not
    allowed (an agent token)."""
    from memsidecar_client import MemsidecarError

    try:
        if agent is None:
            stats = client.vault_stats(page_size=1)
            return int(stats.live + stats.forgotten)
        return sum(int(s.live + s.forgotten) for page in client.vault_stats_pages(1000)
                   for s in page.scopes if s.agent_id in ("", agent))
    except MemsidecarError:
        return None
