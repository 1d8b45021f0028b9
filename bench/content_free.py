"""Which real dialogue turns the content-free rule (``sidecar.conversation.chatter``) takes for
chatter: every CoQA question and every LongMemEval user turn, each flagged one listed.

    .venv/bin/python -m bench.content_free --coqa ../shared/data/coqa_dev.json

A CoQA question always asks something, so each flagged question is a false one. A LongMemEval
user turn may be a plain acknowledgement; the flagged ones are listed to be read. The short
turns that are *not* flagged (at most three words) are listed too: they are the continuations
("and?", "go on") the rule leaves to the search. Writes ``bench/results/content_free.md``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from bench.lme_data import load_oracle, pooled_turns
from bench.results import RESULTS, stamp
from sidecar.conversation.chatter import content_free

SHORT_WORDS = 3


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--coqa", type=Path, required=True, help="CoQA json (coqa_dev.json)")
    parser.add_argument("--out", type=Path, default=RESULTS / "content_free.md")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    coqa = [q["input_text"] for item in json.loads(args.coqa.read_text())["data"]
            for q in item["questions"]]
    lme = [t.content for t in pooled_turns(load_oracle(), ("user",))]
    lines = ["| data | turns | content-free | short turns (<= 3 words) not content-free |",
             "|---|---|---|---|"]
    details = []
    for name, texts in (("CoQA questions", coqa), ("LongMemEval user turns", lme)):
        flagged = [t for t in texts if content_free(t)]
        short = [t for t in texts if len(t.split()) <= SHORT_WORDS and not content_free(t)]
        lines.append(f"| {name} | {len(texts)} | {len(flagged)} | {len(short)} |")
        details.append(f"\n### {name}: content-free\n")
        details += [f"- {json.dumps(t[:120])}" for t in sorted(set(flagged))]
        details.append(f"\n### {name}: short, searched (distinct, first 60)\n")
        details += [f"- {json.dumps(t)}" for t in sorted(set(short))[:60]]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("# Content-free turns in real dialogue\n\n" + json.dumps(stamp())
                        + "\n\n" + "\n".join(lines) + "\n" + "\n".join(details) + "\n")
    print("\n".join(lines))
    print(f"{time.perf_counter() - start:.1f} s; details: {args.out}")


if __name__ == "__main__":
    main()
