"""Retrieval after the embedding against txtai's hybrid search, query by query in one run.

    .venv/bin/python bench/retrieval_vs_txtai.py --txtai-python /tmp/txtai-venv/bin/python
    .venv/bin/python bench/retrieval_vs_txtai.py --txtai-python ... --baseline /tmp/before

txtai is not a dependency: it runs in an interpreter of its own (e.g. ``python3.11 -m venv
/tmp/txtai-venv && /tmp/txtai-venv/bin/pip install txtai faiss-cpu``), driven by
``txtai_worker.py`` over pipes.

Corpus: the first ``--memories`` LongMemEval turns (user and assistant, every distinct
session's in a stable order), their vectors from the served model (``minilm-int8``, cached
under bench/.cache/), written into a store with the graph of ``search_speed`` (every 10th
memory a decision, one random edge per 5 memories). Queries: the LongMemEval questions, each
embedded once here (``embed_query``). Both sides get the same texts and the same vectors and
run no model:

- the sidecar (``retrieval_worker.py``): the engine ``Search`` and ``Inject`` use, opened as
  the server opens the store (default ``[retrieval]``: hnsw above 5,000 memories), given the
  query text and vector: vector and BM25 lists, graph expansion, score fusion, hydrated hits;
- the same engine in an Inject's order (``--finish``, a third worker): the lexical list
  before the vector arrives (``ahead``, beside the model in a server; untimed), then the
  rest (``finish``, timed): what an Inject waits for after its model;
- txtai: ``Embeddings(method="external", content=True, hybrid=True)`` (its defaults: faiss,
  BM25 terms index, convex fusion, content in SQLite), its transform a lookup of the
  precomputed vector; ``search(text, limit)``.

Each side times its own call with ``time.perf_counter`` in its own process (the pipes are not
counted); which side goes first alternates query by query (rotates with a baseline), over
``--rounds`` passes, after ``--warmup`` untimed queries each. Prints p50/p99 per side, txtai's
over the sidecar's (the speed-up), the sidecar's own stage laps, the mean top-k overlap of
the two sides' hits, and each side's evidence rate (queries with a hit from an answer
session, among those whose answer sessions are in the corpus): a check that both return
sensible hits. With ``--baseline
TREE`` (a source tree, e.g. ``git archive main | tar -x -C /tmp/before``), a second sidecar
worker imports ``sidecar`` and ``kernels`` from TREE over a copy of the store: before and
after in the same run, and on how many queries both give the same hits in the same order
(with the largest score difference: the recency boost reads the clock).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from lme_data import (  # noqa: E402
    CACHE,
    cached_embeddings,
    load_oracle,
    pooled_turns,
    questions,
    store_suffix,
)
from search_speed import with_graph  # noqa: E402
from store_build import build_store  # noqa: E402
from trees import source_tree  # noqa: E402

from sidecar.api.server_config import ServerConfig  # noqa: E402
from sidecar.embedding import Embedder  # noqa: E402
from sidecar.embedding.models import INT8, model_files  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TXTAI = "txtai"


@dataclass
class Side:
    """One engine's worker process and what it answered."""

    name: str
    process: subprocess.Popen[str]
    ready: dict[str, object] = field(default_factory=dict)
    us: list[float] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)
    answers: dict[int, dict[str, list[object]]] = field(default_factory=dict)

    def ask(self, query: int, limit: int) -> dict[str, object]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"query": query, "limit": limit}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} worker ended (exit {self.process.wait()})")
        answer: dict[str, object] = json.loads(line)
        return answer

    def wait_ready(self) -> None:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} worker ended (exit {self.process.wait()})")
        self.ready = json.loads(line)["ready"]

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("\n")
            self.process.stdin.flush()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def corpus(n: int) -> tuple[list[str], list[str], list[str], np.ndarray]:
    """Ids, texts, session ids and ``minilm-int8`` vectors of the first ``n`` turns."""
    turns = pooled_turns(load_oracle(), ("user", "assistant"))[:n]
    texts = [t.content for t in turns]
    vectors = cached_embeddings(texts, "lme_turns_all", INT8)
    return [f"m{i}" for i in range(len(turns))], texts, [t.session_id for t in turns], vectors


def store(ids: list[str], texts: list[str], vectors: np.ndarray) -> Path:
    data_dir = CACHE / f"txtai_cmp_{len(ids)}{store_suffix(INT8)}"
    build_store(data_dir, ids, texts, vectors, model=INT8)
    with_graph(data_dir, ids)
    return data_dir


def exchange(folder: Path, ids: list[str], texts: list[str], vectors: np.ndarray,
             queries: list[str], query_vectors: np.ndarray, txtai_config: str) -> None:
    """The files both workers read."""
    (folder / "docs.json").write_text(json.dumps(list(zip(ids, texts, strict=True))),
                                      encoding="utf-8")
    np.save(folder / "doc_vectors.npy", vectors.astype(np.float32))
    (folder / "queries.json").write_text(json.dumps(queries), encoding="utf-8")
    np.save(folder / "query_vectors.npy", query_vectors.astype(np.float32))
    config = json.loads(txtai_config)
    if not isinstance(config, dict):
        raise SystemExit("--txtai-config: a JSON object of Embeddings keyword arguments")
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")


def start(name: str, argv: list[str], env: dict[str, str]) -> Side:
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env=env, bufsize=1)
    return Side(name, process)


def sidecar_env(tree: Path) -> dict[str, str]:
    """Imports ``sidecar`` and ``kernels`` from ``tree`` (first on the path; no script
    folder or working directory put before it)."""
    return {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(source_tree(tree)),
            "PYTHONSAFEPATH": "1"}


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) / 1000


def cpu_flags() -> str:
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    return " ".join(sorted(set(re.findall(r"\b(avx512[a-z]*|avx2|fma)\b", text)))) or "none"


def evidence_rate(side: Side, sessions: dict[str, str], wanted: list[frozenset[str]],
                  k: int) -> str:
    """Queries with a top-``k`` hit from one of their answer sessions, over those whose
    answer sessions have turns in the corpus."""
    held = set(sessions.values())
    asked = [i for i, want in enumerate(wanted) if want & held]
    found = sum(1 for i in asked if any(sessions.get(str(m)) in wanted[i]
                                        for m in side.answers[i]["ids"][:k]))
    return f"{found}/{len(asked)}"


def overlap(a: Side, b: Side, k: int) -> float:
    shared = [len(set(a.answers[i]["ids"][:k]) & set(b.answers[i]["ids"][:k]))
              for i in a.answers]
    return float(np.mean(shared)) / k


def same_hits(a: Side, b: Side) -> tuple[int, float]:
    """Queries whose hits are the same memories in the same order, and the largest score
    difference between them (the recency boost reads the clock: not bit-equal)."""
    same, gap = 0, 0.0
    for i, answer in a.answers.items():
        other = b.answers[i]
        if answer["ids"] == other["ids"]:
            same += 1
            gap = max([gap, *(abs(float(x) - float(y))  # type: ignore[arg-type]
                              for x, y in zip(answer["scores"], other["scores"], strict=True))])
    return same, gap


def run(sides: list[Side], count: int, rounds: int, warmup: int, limit: int) -> None:
    """Every query to every side, the first side rotating query by query."""
    for i in range(min(warmup, count)):
        for side in sides:
            side.ask(i, limit)
    for r in range(rounds):
        for i in range(count):
            shift = (r * count + i) % len(sides)
            for side in sides[shift:] + sides[:shift]:
                answer = side.ask(i, limit)
                side.us.append(float(answer["us"]))  # type: ignore[arg-type]
                for stage, us in dict(answer.get("stages") or {}).items():
                    side.stages.setdefault(stage, []).append(float(us))
                side.answers[i] = {k: v for k, v in answer.items()  # type: ignore[misc]
                                   if k in ("ids", "scores")}


def report(sides: list[Side], ours: Side, txtai: Side, sessions: dict[str, str],
           wanted: list[frozenset[str]], limit: int) -> None:
    print("| engine | p50 ms | p99 ms | txtai p50 / this p50 | txtai p99 / this p99 | "
          f"evidence in top {limit} |")
    print("|---|---|---|---|---|---|")
    for side in sides:
        print(f"| {side.name} | {pct(side.us, 50):.3f} | {pct(side.us, 99):.3f} | "
              f"{pct(txtai.us, 50) / pct(side.us, 50):.2f}x | "
              f"{pct(txtai.us, 99) / pct(side.us, 99):.2f}x | "
              f"{evidence_rate(side, sessions, wanted, limit)} |")
    print(f"\ntop-{limit} overlap sidecar / txtai: {overlap(ours, txtai, limit):.3f}")
    for side in sides:
        if side.stages:
            print(f"{side.name} stages, p50 / p99 ms: " + ", ".join(
                f"{stage} {pct(us, 50):.3f} / {pct(us, 99):.3f}"
                for stage, us in side.stages.items()))
    for side in sides:
        if side is not ours and side is not txtai:
            same, gap = same_hits(ours, side)
            print(f"{side.name}: the sidecar's hits in its order on {same}/"
                  f"{len(ours.answers)} queries (scores within {gap:.1e}); p50 "
                  f"{pct(side.us, 50) / pct(ours.us, 50):.2f}x the sidecar's")
    for side in sides:
        print(f"{side.name} worker: {json.dumps(side.ready)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--txtai-python", type=Path, required=True,
                        help="an interpreter with txtai and faiss-cpu installed")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=470)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--txtai-threads", type=int, default=1,
                        help="OMP_NUM_THREADS of txtai's worker (faiss); the sidecar searches "
                             "on one thread below parallel_min_memories")
    parser.add_argument("--txtai-config", default="{}",
                        help='more Embeddings keyword arguments, JSON (e.g. \'{"backend": '
                             '"hnsw"}\'); default: txtai\'s own')
    parser.add_argument("--finish", action="store_true",
                        help="also time the sidecar in an Inject's order (ahead, then finish)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a source tree whose sidecar is measured beside this one")
    args = parser.parse_args()
    if args.baseline is not None:
        source_tree(args.baseline)  # before anything is built
    ids, texts, session_of, vectors = corpus(args.memories)
    data_dir = store(ids, texts, vectors)
    asked = questions(load_oracle())[: args.queries]
    embedder = Embedder(model_files(INT8), **ServerConfig().embedder_options())
    query_vectors = np.stack([embedder.embed_query(q.text) for q in asked])
    sessions = dict(zip(ids, session_of, strict=True))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="retrieval_vs_txtai_") as tmp:
        folder = Path(tmp)
        exchange(folder, ids, texts, vectors, [q.text for q in asked], query_vectors,
                 args.txtai_config)
        txtai_env = {**os.environ, "OMP_NUM_THREADS": str(args.txtai_threads),
                     "OPENBLAS_NUM_THREADS": str(args.txtai_threads),
                     "TOKENIZERS_PARALLELISM": "false", "PYTHONSAFEPATH": "1"}
        txtai_env.pop("PYTHONPATH", None)
        worker = [str(HERE / "retrieval_worker.py"), str(folder)]
        sides = [start("sidecar", [sys.executable, *worker, str(data_dir), INT8],
                       sidecar_env(ROOT)),
                 start(TXTAI, [str(args.txtai_python), str(HERE / "txtai_worker.py"),
                               str(folder)], txtai_env)]
        if args.finish:
            copy = folder / "finish_store"
            shutil.copytree(data_dir, copy, ignore=shutil.ignore_patterns("*.lock"))
            sides.append(start("sidecar, finish after ahead",
                               [sys.executable, *worker, str(copy), INT8, "finish"],
                               sidecar_env(ROOT)))
        if args.baseline is not None:
            copy = folder / "baseline_store"
            shutil.copytree(data_dir, copy, ignore=shutil.ignore_patterns("*.lock"))
            sides.append(start(f"baseline {args.baseline}",
                               [sys.executable, *worker, str(copy), INT8],
                               sidecar_env(args.baseline)))
        try:
            for side in sides:
                side.wait_ready()
            run(sides, len(asked), args.rounds, args.warmup, args.limit)
        finally:
            for side in sides:
                side.close()
    print(f"\n{args.memories:,} memories, {len(asked)} queries x {args.rounds} rounds, top "
          f"{args.limit}; load average {load_before[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after; CPU flags: {cpu_flags()}\n")
    report(sides, sides[0], sides[1], sessions, [q.evidence_sessions for q in asked],
           args.limit)


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    with recorded("retrieval_vs_txtai"):
        main()
