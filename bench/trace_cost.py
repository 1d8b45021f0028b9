"""What the injection trace adds to an Inject: building one turn's record and putting it in
its channel's ring (5 injected items with three source ranks each, 15 drops), in process.

Run:  .venv/bin/python -m bench.trace_cost [--turns 20000]
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np

from bench.results import recorded
from sidecar.injection.trace import DropReason, TracedDrop, TraceRing, trace_turn
from sidecar.injection.types import Candidate, Section
from sidecar.records import Memory, MemoryType
from sidecar.retrieval.contract import SourceRank


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20000)
    turns = parser.parse_args().turns
    memory = Memory(id="m", content="x", type=MemoryType.FACT, importance=0.5, created_at=0,
                    updated_at=0, last_accessed_at=0, access_count=0, source="",
                    channel_id="", agent_id="a", forgotten=False, version=1)
    ranks = (SourceRank("vector", 1, 1.0), SourceRank("lexical", 2, 1.5),
             SourceRank("graph", 0, 1.0))
    chosen = [Candidate(memory=memory, section=Section.CONTEXTUAL, score=0.2, cosine=0.5,
                        embedding=np.zeros(384, np.float32), ranks=ranks) for _ in range(5)]
    drops = [TracedDrop("m", DropReason.FLOOR, 0.1, 0.05) for _ in range(15)]
    ring = TraceRing(lambda: 50)
    text = "which database does the billing service use? " * 3
    with recorded("trace_cost"):
        spent = timeit.timeit(lambda: ring.record("c1", trace_turn(
            "a", text, 1, "", 100, chosen, drops, 0)), number=turns)
        print(f"trace record, 5 injected + 15 dropped: {spent / turns * 1e6:.1f} us per turn "
              f"({turns} turns)")


if __name__ == "__main__":
    main()
