"""What ``item_age`` costs in block tokens: the same LongMemEval turns injected with it on and
off, over memories dated like their sessions.

For each of the first ``--questions`` oracle questions (at least two sessions): every message
of its sessions is restored as a memory of the question's agent, ``created_at`` = its
session's date; then each user turn and the question are injected in the question's channel,
in order. The dates are shifted so the question is asked now (``--as-of question``, the ages
the model would read: days to months) or left as they are (``--as-of dates``: every memory is
years old, so every line carries a date). The same run with ``item_age = false`` gives the
same items (age does not change what is chosen), so the difference in ``block_tokens`` is the
cost of the age notes. Tokens are counted by the embedder's tokenizer, as ``max_tokens``.

Run:  .venv/bin/python -m bench.item_age_tokens [--questions 30] [--as-of question|dates]
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.lme import oracle
from bench.results import write_results
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.embedding import Embedder
from sidecar.embedding.models import model_files
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.types import InjectRequest
from sidecar.metrics.config import HttpConfig
from sidecar.records import MemoryDraft, MemoryType, Restored
from sidecar.timing import now_us


def when_us(text: str) -> int:
    """``2023/05/20 (Sat) 02:21`` -> microseconds since the epoch (UTC)."""
    stamp = datetime.strptime(text.split(" (")[0] + " " + text.rsplit(" ", 1)[1],
                              "%Y/%m/%d %H:%M")
    return int(stamp.timestamp() * 1_000_000)


def run(questions: list[dict[str, Any]], embedder: Embedder, item_age: bool,
        as_of: str) -> tuple[list[int], list[int]]:
    """(block tokens, items) of every turn, in order."""
    tokens: list[int] = []
    items: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        config = ServerConfig(listen="127.0.0.1:0", data_dir=folder, http=HttpConfig(listen=""))
        settings = ConfigStore(Path(folder) / CONFIG_FILENAME,
                               Config(defaults=MemoryInjectionConfig(item_age=item_age)), None)
        app = App.open(config, embedder=embedder, settings=settings)
        try:
            for q in questions:
                shift = now_us() - when_us(q["question_date"]) if as_of == "question" else 0
                qid = q["question_id"]
                drafts: list[MemoryDraft | Any] = []
                for date, session in zip(q["haystack_dates"], q["haystack_sessions"],
                                         strict=True):
                    at = when_us(date) + shift
                    drafts += [MemoryDraft(
                        content=m["content"][:1200], id=f"{qid}/{len(drafts)}", agent_id=qid,
                        channel_id=qid, source="replay",
                        type=MemoryType.FACT if m["role"] == "user" else MemoryType.OBSERVATION,
                        restored=Restored(created_at=at, updated_at=at, version=1,
                                          forgotten=False))
                        for m in session if m["content"].strip()]
                for start in range(0, len(drafts), 100):
                    app.memories.import_batch(drafts[start:start + 100])
                texts = [m["content"] for s in q["haystack_sessions"] for m in s
                         if m["role"] == "user" and m["content"].strip()] + [q["question"]]
                for text in texts:
                    reply = app.injector.inject(InjectRequest(agent_id=qid, channel_id=qid,
                                                              text=text, source="user"))
                    tokens.append(reply.stats.block_tokens)
                    items.append(len(reply.items))
        finally:
            app.close()
    return tokens, items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--as-of", choices=("question", "dates"), default="question")
    args = parser.parse_args()
    chosen = [q for q in oracle()[:250] if len(q["haystack_sessions"]) >= 2][:args.questions]
    embedder = Embedder(model_files("minilm-int8"), **ServerConfig().embedder_options())
    off_tokens, off_items = run(chosen, embedder, False, args.as_of)
    on_tokens, on_items = run(chosen, embedder, True, args.as_of)
    assert on_items == off_items, "item_age changed which memories were injected"
    off, on, n = np.array(off_tokens), np.array(on_tokens), np.array(on_items)
    per_item = (on.sum() - off.sum()) / max(1, n.sum())
    text = (f"{len(chosen)} questions, {len(n)} turns ({int((n > 0).sum())} with a block), "
            f"{n.sum()} items ({n.mean():.2f} a turn), ages as of the {args.as_of}\n\n"
            "| item_age | block tokens a turn (mean) | p50 of non-empty | p90 of non-empty |\n"
            "|---|---|---|---|\n"
            + "".join(f"| {name} | {v.mean():.1f} | {np.percentile(v[n > 0], 50):.0f} | "
                      f"{np.percentile(v[n > 0], 90):.0f} |\n"
                      for name, v in (("off", off), ("on", on)))
            + f"\ncost: {per_item:.2f} tokens a line "
            f"({(on.mean() - off.mean()):.1f} a turn)")
    write_results(f"item_age_tokens_{args.as_of}", text)
    print(text)


if __name__ == "__main__":
    main()
