"""``memsidecar captured [--agent A] [--channel C] [--user U] [--forget]``: the memories
capture wrote (source "capture"), one JSON line each (id, agent, channel, user, created,
content); with ``--forget``, each is erased for good instead (ForgetMemory's hard mode: no
text, version or edge of it stays on disk) and only the count is printed. Without
``--agent``: every agent's and those of calls without an agent (with [server.auth] on, the
operator token); ``--agent ''``: only the latter."""

from __future__ import annotations

import argparse
import json
import sys

from sidecar.cli import remote
from sidecar.story import plural

SOURCE = "capture"
PAGE = 500


def add(parser: argparse.ArgumentParser) -> None:
    remote.add_options(parser)
    parser.add_argument("--agent", default=None, help="only agent A's captured memories "
                        "('': those of calls without an agent)")
    parser.add_argument("--channel", default="", help="only those captured in channel C")
    parser.add_argument("--user", default="", help="only those of end user U")
    parser.add_argument("--forget", action="store_true",
                        help="erase them for good (their text leaves the disk)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with remote.connect(args) as client:
        found = list(client.iter_memories(
            agent_id=args.agent or "", all_agents=args.agent is None, channel_id=args.channel,
            source=SOURCE, page_size=PAGE, user_id=args.user))
        # an agent's listing also holds the shared scope: keep the scope asked for
        found = [m for m in found if m.source == SOURCE
                 and (args.agent is None or m.agent_id == args.agent)]
        if args.forget:
            for memory in found:
                client.forget(memory.id, source="cli", agent_id=memory.agent_id, hard=True)
            print(f"{plural(len(found), 'captured memory', 'captured memories')} erased",
                  file=sys.stderr)
            return 0
        for memory in found:
            sys.stdout.write(json.dumps({
                "id": memory.id, "agent_id": memory.agent_id, "channel_id": memory.channel_id,
                "user_id": memory.user_id, "created_at": memory.created_at.ToJsonString(),
                "content": memory.content,
            }, ensure_ascii=False) + "\n")
    print(plural(len(found), "captured memory", "captured memories"), file=sys.stderr)
    return 0
