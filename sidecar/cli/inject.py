"""``memsidecar inject --channel C [--user U] "text"``: a real Inject for the next turn of
channel C (it records the turn like an agent's call); prints the block, then the turn's story:
each memory injected (section, cosine, fused score, each source's rank), each one held back and
why, then the best few cut by the relevance floor. Memories are named by a short excerpt and
their id."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TextIO

from sidecar.cli import remote
from sidecar.cli.args import UINT64_MAX, integer
from sidecar.story import FLOOR_SHOWN, best_first, plural, split_drops

if TYPE_CHECKING:
    from memsidecar.v1 import injection_pb2, store_pb2

EXCERPT = 48  # characters of content that name a memory
Excerpt = Callable[[str], str]  # memory id -> its excerpt


def add(parser: argparse.ArgumentParser) -> None:
    remote.add_options(parser)
    parser.add_argument("text")
    parser.add_argument("--channel", required=True, help="the conversation's channel id")
    parser.add_argument("--agent", default="", help="the agent taking the turn")
    parser.add_argument("--user", default="", help="the end user who wrote the turn (their "
                        "private memories may be injected; default none)")
    parser.add_argument("--source", default="user", help="where the text came from")
    parser.add_argument("--turn", type=integer(0, UINT64_MAX), default=0,
                        help="the turn number (default 0: the channel's next)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from memsidecar_client import MemsidecarError

    with remote.connect(args) as client:
        reply = client.inject(args.text, channel_id=args.channel, agent_id=args.agent,
                              source=args.source, turn=args.turn, user_id=args.user)
        show(reply, sys.stdout)
        trace = client.get_injection_trace(args.channel, agent_id=args.agent, last_n=1)
        names = {item.id: item.content for item in reply.items}

        def excerpt(memory_id: str) -> str:
            if memory_id not in names:
                try:
                    names[memory_id] = client.get(memory_id, agent_id=args.agent).content
                except MemsidecarError:
                    names[memory_id] = ""
            return short(names[memory_id], memory_id)

        show_trace(reply.turn, trace, excerpt, sys.stdout, reply.stats.below_min_score)
    return 0


def short(content: str, memory_id: str) -> str:
    """``"first words of the memory…" (id)``; the id alone when the content is unknown."""
    text = " ".join(content.split())
    if not text:
        return memory_id
    cut = text if len(text) <= EXCERPT else text[:EXCERPT - 1].rstrip() + "…"
    return f'"{cut}" ({memory_id[:8]})'


def show(reply: injection_pb2.InjectResponse, out: TextIO) -> None:
    """The block as the agent receives it, then the turn's counts."""
    if reply.skip_reason:
        print(f"turn {reply.turn}: nothing injected ({reply.skip_reason}); "
              f"{reason_counts(reply.stats)}", file=out)
        return
    print(reply.block, file=out)
    print(f"\nturn {reply.turn}: {plural(len(reply.items), 'memory', 'memories')} injected, "
          f"{plural(reply.stats.block_tokens, 'token')}; {reason_counts(reply.stats)}", file=out)


def show_trace(turn: int, trace: injection_pb2.GetInjectionTraceResponse, excerpt: Excerpt,
               out: TextIO, below: int) -> None:
    """Injected, held back (and why), then the floor's best cuts, each highest score first,
    the rest of the ``below`` floor cuts counted. Says so when the trace is off
    (`[injection] trace_turns = 0`)."""
    from memsidecar.v1 import injection_pb2

    traced = [t for t in trace.turns if t.turn == turn]
    if not traced:
        print(f"turn {turn}: no trace held ([injection] trace_turns)", file=out)
        return
    floor = injection_pb2.DROP_REASON_FLOOR
    held, cut = split_drops(traced[0].dropped, lambda d: d.reason == floor, lambda d: d.score)
    for item in best_first(traced[0].injected, lambda i: i.score):
        print(f"  injected   {excerpt(item.id)}  {why(item)}", file=out)
    for dropped in held:
        print(f"  held back  {excerpt(dropped.id)}  {reason(dropped, excerpt)}  "
              f"cosine {dropped.cosine:.3f}  score {dropped.score:.4f}", file=out)
    shown = cut[:FLOOR_SHOWN]
    for dropped in shown:
        print(f"  floor      {excerpt(dropped.id)}  cosine {dropped.cosine:.3f}  "
              f"score {dropped.score:.4f}", file=out)
    if below > len(shown):
        print(f"  ... {below - len(shown)} more of the {below} below the floor", file=out)


def reason(dropped: injection_pb2.DroppedItem, excerpt: Excerpt) -> str:
    from memsidecar.v1 import injection_pb2

    name = str(injection_pb2.DropReason.Name(dropped.reason)).removeprefix("DROP_REASON_").lower()
    if dropped.shown_in_turn:
        return f"cooldown: still shown by turn {dropped.shown_in_turn}"
    if dropped.duplicate_of:
        return f"near-duplicate of {excerpt(dropped.duplicate_of)}"
    return name.replace("_", " ")


def ranks(sources: Iterable[store_pb2.SourceRank]) -> str:
    return " ".join(f"{s.name}={s.rank or '-'}" for s in sources)


def why(item: injection_pb2.TracedItem) -> str:
    from memsidecar.v1 import injection_pb2

    section = injection_pb2.Section.Name(item.section).removeprefix("SECTION_").lower()
    text = f"{section}  cosine {item.cosine:.3f}  score {item.score:.4f}"
    return text + (f"  ranks {ranks(item.sources)}" if item.sources else "")


def reason_counts(stats: injection_pb2.InjectStats) -> str:
    """The candidates (pinned, and search hits that passed the relevance floor) and what
    became of those not injected; then the hits the floor cut."""
    return (f"{plural(stats.candidates, 'candidate')} ({stats.deduped_by_id} already in view, "
            f"{plural(stats.deduped_semantic, 'near-duplicate')}, "
            f"{stats.dropped_by_budget} over budget); "
            f"{plural(stats.below_min_score, 'search hit')} below the relevance floor")
