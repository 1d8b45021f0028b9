"""What committing a turn before its reply costs Inject: durable vs write-behind, interleaved.

In-process (``App`` on a fresh data dir): ``--memories`` LongMemEval turns imported, then the
user turns of the first questions sent as Injects, each turn twice in a row on two channels:
once through the real commit (state rows, reply and access records in one SQLite transaction
before ``inject`` returns) and once through the earlier write-behind commit (the same rows
queued to the writer thread; kept here only as the reference). The query embeddings are
computed beforehand so the model's time does not drown the difference. Prints p50/p99 of the
whole call and of its ``persist`` stage, per mode, in ms.

With ``--capture`` the two modes are instead capture off and capture = "user" (both durable):
two agents over the same shared memories, the second capturing its turns (its captures join
its scope as the run goes); this is capture's own cost on the reply path (the text gates, the
pending row in the turn's transaction, the own-channel hold), the drain's work included as it
happens beside the calls.

With ``--guard`` the two modes are the commit with and without its erased-memory guard (a
count of the turn's ids in ``memories``, in the turn's transaction; both durable).

Run:  .venv/bin/python -m bench.durable_turn [--memories 2000] [--turns 400] [--capture]
      [--guard]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

import numpy as np

from bench.inject_overhead import PrecomputedEmbedder, user_turns
from bench.lme_data import load_oracle, pooled_turns
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config.schema import AgentConfig
from sidecar.embedding import Embedder, bundled_model_files
from sidecar.injection.channels import ChannelStates, rows_of
from sidecar.injection.pipeline import Injector
from sidecar.injection.state import ChannelState, Committed
from sidecar.injection.types import InjectRequest
from sidecar.live import Live
from sidecar.records import MemoryDraft, MemoryType

Commit = Callable[..., None]


def write_behind(states: ChannelStates) -> Commit:
    """The commit as it was: recorded in memory, the SQLite transaction queued to the writer."""

    def commit(state: ChannelState, entry: Committed, keep: int | None, depth: int,
               also: Callable[[], None] | None = None,
               durable: Callable[[], None] | None = None) -> None:
        before = state.copy()
        saved = rows_of(state, entry, state.record(entry, keep, depth), before)

        def write() -> None:
            states.repo.save(state.channel_id, saved)
            for job in (also, durable):
                if job is not None:
                    job()

        states._submit(state.channel_id, write)  # noqa: SLF001 (the reference path)

    return commit


CAPTURING = "capturing"


def capturing(injector: Injector) -> None:
    """Agent ``CAPTURING`` captures its user turns; the others do not."""
    config = injector.config.get()
    mine = replace(config.defaults, capture="user")
    agents = {CAPTURING: AgentConfig(CAPTURING, mine, {"capture": "user"})}
    injector.config = Live.fixed(replace(config, agents=MappingProxyType(agents)))


def pct(values: list[float]) -> str:
    return f"{np.percentile(values, 50):.3f} / {np.percentile(values, 99):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--capture", action="store_true",
                        help="capture off vs capture = \"user\" instead of the two commits")
    parser.add_argument("--guard", action="store_true",
                        help="the erased-memory guard on vs off instead of the two commits")
    args = parser.parse_args()
    embedder = Embedder(bundled_model_files())
    turns = user_turns(args.turns)
    fake = PrecomputedEmbedder(embedder, {t: embedder.embed_query(t) for _, t in turns})
    pool = pooled_turns(load_oracle(), ("user", "assistant"))[: args.memories]
    with tempfile.TemporaryDirectory() as data_dir:
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=data_dir), embedder=embedder)
        try:
            app.memories.import_stream(MemoryDraft(content=t.content[:1200], type=MemoryType.FACT,
                                                   agent_id="" if args.capture else "bench")
                                       for t in pool)
            app.warm_up()
            app.retriever.embedder = fake  # type: ignore[attr-defined]
            injector = replace(app.injector, embedder=fake)  # type: ignore[arg-type]
            states = injector.states
            if args.capture:
                capturing(injector)
            modes: dict[str, Commit] = {"durable": states.commit,
                                        "write-behind": write_behind(states)}
            agents = {"durable": "bench", "write-behind": "bench"}
            if args.capture:
                modes = {"capture off": states.commit, "capture user": states.commit}
                agents = {"capture off": "bench", "capture user": CAPTURING}
            guards: dict[str, Callable[[list[str]], None]] = {}
            if args.guard:
                modes = {"guard": states.commit, "no guard": states.commit}
                agents = {"guard": "bench", "no guard": "bench"}
                guards = {"guard": injector._not_erased, "no guard": lambda ids: None}
            total: dict[str, list[float]] = {m: [] for m in modes}
            persist: dict[str, list[float]] = {m: [] for m in modes}
            for n, (qid, text) in enumerate(turns):
                order = list(modes) if n % 2 == 0 else list(reversed(modes))
                for mode in order:
                    states.commit = modes[mode]  # type: ignore[method-assign]
                    if guards:
                        injector._not_erased = guards[mode]  # type: ignore[method-assign]
                    start = time.perf_counter_ns()
                    out = injector.inject(InjectRequest(agent_id=agents[mode], text=text,
                                                        channel_id=f"{qid}-{mode}"))
                    total[mode].append((time.perf_counter_ns() - start) / 1e6)
                    persist[mode].append(out.stats.stages_us.get("persist", 0) / 1000)
            states.commit = modes[next(iter(modes))]  # type: ignore[method-assign]
            print(f"{len(pool)} memories, {len(turns)} turns per mode, interleaved; "
                  "p50 / p99 ms")
            print("| mode | Inject total | persist stage |\n|---|---|---|")
            for mode in modes:
                print(f"| {mode} | {pct(total[mode])} | {pct(persist[mode])} |")
            first, second = list(modes)
            delta = np.median(total[first]) - np.median(total[second])
            print(f"{first} - {second}, Inject p50: {delta:+.3f} ms")
            if injector.capture is not None and args.capture:
                print(f"captures: {injector.capture.outcomes()}")
        finally:
            app.close()


if __name__ == "__main__":
    import sys

    from bench.results import recorded

    with recorded("durable_turn_guard" if "--guard" in sys.argv else "durable_turn"):
        main()
