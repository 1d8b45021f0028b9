"""False rejections of the vault's noise gate on real dialogue (LongMemEval oracle turns).

    .venv/bin/python bench/noise_gate.py

Every user and assistant turn of every session is offered to ``NoiseGate`` with the default
``vault.noise_phrases``. The turns are real conversation, so each rejection is a false one;
every rejected turn is listed. Writes ``bench/results/noise_gate.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from lme_data import load_oracle, pooled_turns  # noqa: E402

from sidecar.errors import FailedPrecondition  # noqa: E402
from sidecar.records import MemoryDraft, MemoryType  # noqa: E402
from sidecar.vault.config import DEFAULT_NOISE_PHRASES  # noqa: E402
from sidecar.vault.gates import NoiseGate  # noqa: E402

EXCERPT = 110


def main() -> None:
    turns = pooled_turns(load_oracle(), ("user", "assistant"))
    gate = NoiseGate(DEFAULT_NOISE_PHRASES)
    empty = np.zeros(0, np.float32)
    rejected = []
    for turn in turns:
        try:
            gate.check(MemoryDraft(turn.content, MemoryType.FACT), empty, "memory")
        except FailedPrecondition:
            rejected.append(turn)
    for role in ("user", "assistant"):
        total = sum(1 for t in turns if t.role == role)
        hit = sum(1 for t in rejected if t.role == role)
        print(f"- {role} turns: {hit} of {total} rejected ({100 * hit / total:.3f} %)")
    evidence = sum(1 for t in rejected if t.has_answer)
    print(f"- all turns: {len(rejected)} of {len(turns)} rejected "
          f"({100 * len(rejected) / len(turns):.3f} %), {evidence} of them evidence turns\n")
    if rejected:
        print("| turn | role | evidence | text (start) |\n|---|---|---|---|")
    for t in rejected:
        text = " ".join(t.content.split())[:EXCERPT].replace("|", "/")
        print(f"| {t.id} | {t.role} | {'yes' if t.has_answer else ''} | {text} |")


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    with recorded("noise_gate"):
        main()
