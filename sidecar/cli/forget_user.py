"""``memsidecar forget-user --agent A --user U``: erase end user U of agent A for good
(ForgetUser): their memories with every version and edge, their captures, and the state of
the channels they spoke in. Prints what went, counted; never any of the user's text. A second
run erases nothing. ``--agent ''``: a user of the calls made without an agent. With
[server.auth] on, the operator token or agent A's own."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from sidecar.cli import remote
from sidecar.story import plural

if TYPE_CHECKING:
    from memsidecar.v1 import store_pb2


def add(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    remote.add_options(parser)
    parser.add_argument("--agent", required=True, help="the agent the user talked to ('': "
                        "calls made without an agent)")
    parser.add_argument("--user", required=True, help="the end user's id to erase")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with remote.connect(args) as client:
        reply = client.forget_user(args.agent, args.user)
    show(args.agent, args.user, reply, sys.stdout)
    return 0


def show(agent: str, user: str, reply: store_pb2.ForgetUserResponse, out: TextIO) -> None:
    """One line: the counts, or that nothing was left (ids the server accepted, so valid)."""
    counts = (reply.memories, reply.versions, reply.edges, reply.captures, reply.channels)
    whose = f"user {user} of agent {agent}" if agent else \
        f"user {user} of the calls without an agent"
    if not any(counts):
        print(f"{whose}: nothing to erase", file=out)
        return
    print(f"{whose} erased: "
          f"{plural(reply.memories, 'memory', 'memories')}, "
          f"{plural(reply.versions, 'version')}, {plural(reply.edges, 'edge')}, "
          f"{plural(reply.captures, 'capture')}, {plural(reply.channels, 'channel')}",
          file=out)
