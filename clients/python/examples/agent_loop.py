"""A template for a Python agent using memsidecar: copy it into your agent.

Each stdin line is one user turn: PruneHistory (with the channel, keeping 3 blocks) drops the
oldest memory blocks and tells the sidecar which memories the model no longer sees; Inject
returns the block for this turn; the block goes into the history before the user's message;
llm(history) answers; the answer is appended. Each turn's block is printed.

    python clients/python/examples/agent_loop.py --addr 127.0.0.1:50051 --channel demo \
        --user alice < q.txt

Every Inject names the end user (``--user``): the block may hold that user's private memories
and never another user's, and a turn the sidecar captures belongs to that user.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
from memsidecar.v1 import injection_pb2, memory_pb2, store_pb2
from memsidecar_client import Client, MemsidecarError, memory_type, message

MAX_BLOCKS = 3  # memory blocks the history keeps, the incoming one included
# The example memories (name, type, content), the same as the Go and Rust templates' seeds.tsv.
# A memory id names one memory of one agent, so each seed's id is the agent's: AGENT:NAME.
# Seeding twice stores nothing new. Replace them with your agent's own, or drop the seeding.
SEEDS = (
    ("example-db", "decision",
     "We chose PostgreSQL 16 as the primary database for the billing service."),
    ("example-deploy", "fact",
     "The deploy pipeline ships to the Kubernetes cluster every Friday."),
    ("example-style", "preference",
     "The user prefers short answers with Go code examples."),
    ("example-oncall", "fact",
     "The on-call rotation changes every Monday at 09:00 UTC and pages go to PagerDuty."),
    ("example-cache", "decision",
     "Session data is cached in Redis and expires after 15 minutes."),
    ("example-api", "decision",
     "Public API versions stay frozen for 12 months; a breaking change needs a new /v2 prefix."),
)


def llm(history: list[injection_pb2.Message]) -> str:
    """Stands in for your model: CALL YOUR LLM HERE with the whole history (memory blocks
    included). This stand-in echoes the last user message."""
    return f"(echo) {history[-1].content}"


def seeds(agent: str) -> Iterator[store_pb2.ImportItem]:
    """The example memories of SEEDS, owned by ``agent`` (ids AGENT:NAME)."""
    for name, type, content in SEEDS:
        yield store_pb2.ImportItem(memory=memory_pb2.Memory(
            id=f"{agent}:{name}", type=memory_type(type), content=content, agent_id=agent))


def seed(client: Client, agent: str) -> None:
    """Imports the example memories over a streaming import: those already stored with the
    same fields count as deduplicated, so a second run stores nothing. Each rejected one is
    printed with the sidecar's reason."""
    summary = client.import_items(seeds(agent))
    print(f"seeded {summary.received} memories: {summary.stored} stored, "
          f"{summary.deduplicated} already there, {summary.rejected} rejected", file=sys.stderr)
    for error in summary.errors:
        name = SEEDS[error.index][0]
        print(f"seed {name} rejected: {error.code}: {error.message}", file=sys.stderr)


def step(client: Client, agent: str, channel: str, history: list[injection_pb2.Message],
         text: str, turn: int, user: str = "") -> list[injection_pb2.Message]:
    """Runs one turn and returns the grown history."""
    pruned = client.prune_history(history, max_keep=MAX_BLOCKS, channel_id=channel,
                                  agent_id=agent)
    history = list(pruned.messages)
    injected = client.inject(text, channel_id=channel, agent_id=agent, source="user",
                             user_id=user)
    print(f"--- turn {turn}")
    print("released turns:", ",".join(map(str, pruned.released_turns)) or "-")
    if injected.block:
        print(injected.block)
        history.append(message("user", injected.block))
    else:
        print(f"(no memory block: {injected.skip_reason})")
    history.append(message("user", text))
    reply = llm(history)
    print(f"assistant: {reply}")
    history.append(message("assistant", reply))
    return history


def run(args: argparse.Namespace) -> None:
    tls = grpc.ssl_channel_credentials(_read(args.ca)) if args.ca else None
    with Client(args.addr, token=args.token, tls=tls) as client:
        try:
            client.wait_ready(args.wait)
        except MemsidecarError as err:
            reason = f"cannot reach the sidecar at {args.addr}: {err}"
            raise SystemExit(f"agent-loop: {reason}") from None
        seed(client, args.agent)
        # A new conversation: forget what the sidecar injected earlier on this channel.
        client.reset_channel(args.channel, agent_id=args.agent)
        history = [message("system", "You are a helpful engineering agent.")]
        for turn, line in enumerate(sys.stdin, start=1):
            history = step(client, args.agent, args.channel, history, line.rstrip("\n"), turn,
                           args.user)


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise SystemExit(f"agent-loop: --ca {path}: {err.strerror}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description="A memsidecar agent loop: one turn per "
                                                 "stdin line, each turn's block printed.")
    parser.add_argument("--addr", default="127.0.0.1:50051",
                        help="sidecar address HOST:PORT, unix:PATH or unix:///PATH")
    parser.add_argument("--channel", default="agent-loop", help="conversation (channel) id")
    parser.add_argument("--agent", default="agent-loop-example",
                        help="agent id owning the seeded memories")
    parser.add_argument("--user", default="",
                        help="end user id sent with every Inject (empty: not known; the "
                        "turns captured then stay private to the channel)")
    parser.add_argument("--token", default="", help="bearer token sent with every call")
    parser.add_argument("--wait", type=float, default=30.0,
                        help="seconds to wait for the sidecar to be ready")
    parser.add_argument("--ca", default="",
                        help="CA certificate (PEM) of a TLS sidecar; plaintext without it")
    try:
        run(parser.parse_args())
    except MemsidecarError as err:
        raise SystemExit(f"agent-loop: {err}") from None


if __name__ == "__main__":
    main()
