"""False refusals of the vault's PII gate on real dialogue (LongMemEval oracle turns), its cost
per turn, and how many random tokens it finds.

    nice -n 10 .venv/bin/python bench/pii_gate.py [--coqa ../shared/data/coqa_dev.json]

Every user and assistant turn of every session is read by ``find_pii`` (the PII gate on a
memory's content; capture's screen and the query context use the same). The turns are real
conversation with no secret in them, so each refusal is a false one; every refused turn is
listed. The cost is the mean and p99 time per turn (each turn read once, the cache cleared).
The tokens are seeded random strings of letters and digits (a secret no prefix or phrase
names), by length. ``--coqa`` also reads every story sentence, question and answer of a CoQA
file (a second corpus of real text). Writes ``bench/results/pii_gate.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(1, str(Path(__file__).parent.parent))  # bench.* for the CoQA sentences

import numpy as np  # noqa: E402
from lme_data import Turn, load_oracle, pooled_turns  # noqa: E402

from bench.conversation_followups import split_sentences  # noqa: E402
from sidecar.vault.pii import find_pii  # noqa: E402

EXCERPT = 110
TOKEN_LENGTHS = (16, 20, 24, 28, 32, 40)
TOKENS_PER_LENGTH = 2000


def refusals(turns: list[Turn]) -> tuple[list[tuple[Turn, tuple[str, ...]]], np.ndarray]:
    """The refused turns with their kinds, and the time each turn took (µs)."""
    refused, spent = [], np.zeros(len(turns))
    for i, turn in enumerate(turns):
        find_pii.cache_clear()
        start = time.perf_counter()
        kinds = find_pii(turn.content)
        spent[i] = (time.perf_counter() - start) * 1e6
        if kinds:
            refused.append((turn, kinds))
    return refused, spent


def token_rates(seed: int = 7) -> list[tuple[int, float]]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    rates = []
    for length in TOKEN_LENGTHS:
        found = sum(bool(find_pii("".join(rng.choice(alphabet) for _ in range(length))))
                    for _ in range(TOKENS_PER_LENGTH))
        rates.append((length, found / TOKENS_PER_LENGTH))
    return rates


def coqa_texts(path: Path) -> list[str]:
    texts = []
    for item in json.loads(path.read_text(encoding="utf-8"))["data"]:
        texts += [item["story"][lo:hi] for lo, hi in split_sentences(item["story"])]
        texts += [q["input_text"] for q in item["questions"]]
        texts += [a["input_text"] for a in item["answers"]]
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--coqa", type=Path, help="CoQA json (coqa_dev.json)")
    args = parser.parse_args()
    turns = pooled_turns(load_oracle(), ("user", "assistant"))
    refused, spent = refusals(turns)
    print("| role | turns | refused | rate | mean chars | µs/turn mean | µs/turn p99 |")
    print("|---|---|---|---|---|---|---|")
    for role in ("user", "assistant"):
        mine = [i for i, t in enumerate(turns) if t.role == role]
        hit = sum(1 for t, _ in refused if t.role == role)
        chars = np.mean([len(turns[i].content) for i in mine])
        print(f"| {role} | {len(mine)} | {hit} | {100 * hit / len(mine):.3f} % | {chars:.0f} "
              f"| {spent[mine].mean():.0f} | {np.percentile(spent[mine], 99):.0f} |")
    evidence = sum(1 for t, _ in refused if t.has_answer)
    print(f"\n- all turns: {len(refused)} of {len(turns)} refused "
          f"({100 * len(refused) / len(turns):.3f} %), {evidence} of them evidence turns")
    kinds = Counter(k for _, found in refused for k in found)
    print(f"- by kind: {dict(kinds) or 'none'}")
    if args.coqa is not None:
        texts = coqa_texts(args.coqa)
        hits = [t for t in texts if find_pii(t)]
        print(f"- CoQA ({args.coqa.name}): {len(hits)} of {len(texts)} story sentences, "
              f"questions and answers refused")
        for text in hits:
            print(f"  - {' '.join(text.split())[:EXCERPT]}")
    print()
    print("Random letters and digits found, by length (seeded, "
          f"{TOKENS_PER_LENGTH} per length):\n")
    print("| length | found |\n|---|---|")
    for length, rate in token_rates():
        print(f"| {length} | {rate:.3f} |")
    if refused:
        print("\n| turn | role | kinds | evidence | text (start) |\n|---|---|---|---|---|")
    for t, found in refused:
        text = " ".join(t.content.split())[:EXCERPT].replace("|", "/")
        print(f"| {t.id} | {t.role} | {', '.join(found)} | {'yes' if t.has_answer else ''} "
              f"| {text} |")


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    with recorded("pii_gate"):
        main()
