"""``memsidecar inject --channel C "text"``: a real Inject for the next turn of channel C (it
records the turn like an agent's call); prints the block, then the turn's trace: why each memory
is in it (section, cosine, fused score, each source's rank) and why each candidate was left out."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from memsidecar.v1 import injection_pb2, store_pb2

from sidecar.cli import remote


def add(sub: Any) -> None:
    parser = remote.add_parser(sub, "inject", "the context block for a turn, and why")
    parser.add_argument("text")
    parser.add_argument("--channel", required=True, help="the conversation's channel id")
    parser.add_argument("--agent", default="", help="the agent taking the turn")
    parser.add_argument("--source", default="user", help="where the text came from")
    parser.add_argument("--turn", type=int, default=0,
                        help="the turn number (default: the channel's next)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with remote.connect(args) as client:
        reply = client.inject(args.text, channel_id=args.channel, agent_id=args.agent,
                              source=args.source, turn=args.turn)
        show(reply, sys.stdout)
        trace = client.get_injection_trace(args.channel, agent_id=args.agent, last_n=1)
        show_trace(reply.turn, trace, sys.stdout)
    return 0


def show(reply: injection_pb2.InjectResponse, out: TextIO) -> None:
    """The block as the agent receives it, then one line per injected memory."""
    if reply.skip_reason:
        print(f"turn {reply.turn}: nothing injected ({reply.skip_reason})", file=out)
        return
    print(reply.block, file=out)
    print(f"\nturn {reply.turn}: {len(reply.items)} injected, "
          f"{reply.stats.block_tokens} tokens; {reason_counts(reply.stats)}", file=out)
    for item in reply.items:
        print(f"  {item.id}  {why(item)}", file=out)


def show_trace(turn: int, trace: injection_pb2.GetInjectionTraceResponse, out: TextIO) -> None:
    """The turn's trace: each source's rank per injected memory, then every candidate left out
    with its reason. Says so when the trace is off (`[injection] trace_turns = 0`)."""
    traced = [t for t in trace.turns if t.turn == turn]
    if not traced:
        print(f"turn {turn}: no trace held ([injection] trace_turns)", file=out)
        return
    for item in traced[0].injected:
        if item.sources:
            print(f"  {item.id}  ranks {ranks(item.sources)}", file=out)
    for dropped in traced[0].dropped:
        reason = injection_pb2.DropReason.Name(dropped.reason).removeprefix("DROP_REASON_")
        print(f"  dropped {dropped.id}  {reason.lower()}  cosine {dropped.cosine:.3f}  "
              f"score {dropped.score:.4f}", file=out)
    if traced[0].dropped_omitted:
        print(f"  ... and {traced[0].dropped_omitted} more dropped", file=out)


def ranks(sources: Iterable[store_pb2.SourceRank]) -> str:
    return " ".join(f"{s.name}={s.rank or '-'}" for s in sources)


def why(item: injection_pb2.InjectedItem) -> str:
    section = injection_pb2.Section.Name(item.section).removeprefix("SECTION_").lower()
    text = f"{section}  cosine {item.cosine:.3f}  score {item.score:.4f}  v{item.version}"
    return text + ("  (updated)" if item.is_update else "")


def reason_counts(stats: injection_pb2.InjectStats) -> str:
    """What the candidates became: deduplicated, dropped by the budget."""
    return (f"{stats.candidates} candidates, {stats.deduped_by_id} already seen, "
            f"{stats.deduped_semantic} near-duplicates, {stats.dropped_by_budget} over budget")
