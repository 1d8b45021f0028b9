"""Speed and quality of each embedding graph, side by side in one run.

Graphs: ``minilm-fp32`` (the packaged graph), the earlier ``minilm-int8`` build (8-bit weights:
its vectors depend on the CPU) and today's ``minilm-int8`` (7-bit weights: the same vectors on
every x86 CPU, the default). For each, with the server's embedding options:

- single-query latency p50 / p99 (``embed_query``) of texts of exactly 16, 64, 128 and 256
  model tokens, rounds interleaved across the graphs so they see the same load;
- import rate: ``ImportMemories`` of ``--memories`` ~28-word memories through the real server,
  every write gate on (the default ``[vault]``);
- LongMemEval held-out half, HYBRID ``Search`` over gRPC: turn and session recall@10 (the
  store of user turns as ``bench/longmemeval_quality.py`` builds it, each graph its own
  vectors; cached under bench/.cache/ by the graph's sha256);
- cosine to fp32 over the golden texts (``tests/embedding/golden/``): lowest and mean.

Run:  .venv/bin/python -m bench.embed_variants [--rounds 200] [--memories 1000] [--no-quality]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))  # longmemeval_quality's flat imports

import numpy as np  # noqa: E402

from bench.bench_foundation import bench_import, serving  # noqa: E402
from bench.corpus import corpus  # noqa: E402
from bench.results import recorded  # noqa: E402
from sidecar.api.server_config import ServerConfig  # noqa: E402
from sidecar.config import Config  # noqa: E402
from sidecar.embedding import Embedder  # noqa: E402
from sidecar.embedding.model_files import ModelFiles, legacy_int8_model_files  # noqa: E402
from sidecar.embedding.models import FP32, INT8, model_files  # noqa: E402
from tests.embedding.golden import texts as golden_texts  # noqa: E402

LENGTHS = (16, 64, 128, 256)
WORDS = ("memory sidecar agents recall the deployment notes about postgres tuning and the "
         "budget for tokens while users ask questions on weekends").split()


def graphs() -> dict[str, ModelFiles]:
    return {FP32: model_files(FP32, verify=True),
            f"{INT8}, 8-bit weights (earlier build)": legacy_int8_model_files(verify=True),
            f"{INT8}, 7-bit weights (default)": model_files(INT8, verify=True)}


def text_of(embedder: Embedder, tokens: int) -> str:
    """A text of exactly ``tokens`` model tokens with [CLS] and [SEP]."""
    words: list[str] = []
    i = 0
    while embedder.count_tokens(" ".join(words)) < tokens - 2:
        words.append(WORDS[i % len(WORDS)])
        i += 1
    while embedder.count_tokens(" ".join(words)) > tokens - 2:
        words.pop()
    return " ".join(words)


def latencies(embedders: dict[str, Embedder], rounds: int) -> dict[tuple[str, int], np.ndarray]:
    reference = next(iter(embedders.values()))
    texts = {n: text_of(reference, n) for n in LENGTHS}
    ms = {(v, n): np.zeros(rounds) for v in embedders for n in LENGTHS}
    for embedder in embedders.values():
        embedder.embed_query("warm up " * 50)
    for r in range(rounds):
        for n, text in texts.items():
            for name, embedder in embedders.items():
                start = time.perf_counter()
                embedder.embed_query(text)
                ms[name, n][r] = (time.perf_counter() - start) * 1000
    return ms


def import_rate(embedder: Embedder, memories: int) -> float:
    with serving(embedder, Config()) as target:
        return bench_import(target, corpus(memories))["memories_per_s"]


def quality(name: str, files: ModelFiles) -> tuple[float, float]:
    """Held-out HYBRID turn and session recall@10 with ``files``'s vectors and queries."""
    from lme_data import CACHE, cached_embeddings, load_oracle, pooled_turns, questions
    from longmemeval_quality import MODES, ROLES, evaluate, split
    from memsidecar.v1 import store_pb2
    from store_build import Served, build_store

    from sidecar.retrieval.config import RetrievalConfig

    data = load_oracle()
    turns = [t for t in pooled_turns(data, ROLES["all"]) if t.role in ROLES["user"]]
    vectors = cached_embeddings([t.content for t in turns], "lme_turns_user", files=files)
    data_dir = CACHE / f"lme_store_user_graph_{files.sha256[:12]}_channels"
    build_store(data_dir, [t.id for t in turns], [t.content for t in turns], vectors,
                model=files.name, channels=[t.session_id for t in turns])
    qs = questions(data)
    stored = {t.id for t in turns if t.has_answer}
    evidence = {q.id: {t for t in stored if t.split("#", 1)[0] in q.evidence_sessions}
                for q in qs}
    _, held = split(qs, 20261122)
    served = Served(data_dir, Embedder(files, **_options()), RetrievalConfig(), files.name)
    try:
        ranked = {q.id: [h.memory.id for h in served.store.Search(store_pb2.SearchRequest(
            query=q.text, limit=10, mode=MODES["HYBRID"])).hits] for q in held}
    finally:
        served.close()
    turn, session = evaluate(ranked, held, evidence)
    print(f"{name}: quality measured", file=sys.stderr)
    return turn.r10, session.r10


def _options() -> dict[str, int]:
    return ServerConfig().embedder_options()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--no-quality", action="store_true", help="skip LongMemEval")
    args = parser.parse_args()
    files = graphs()
    embedders = {name: Embedder(f, **_options()) for name, f in files.items()}  # type: ignore[arg-type]
    before = os.getloadavg()[0]
    ms = latencies(embedders, args.rounds)
    golden = golden_texts()
    fp32 = embedders[FP32].embed(golden)
    rows = []
    for name, embedder in embedders.items():
        cos = (np.stack([embedder.embed_one(t) for t in golden]) * fp32).sum(axis=1)
        rate = import_rate(embedder, args.memories)
        recall = ("n/a", "n/a") if args.no_quality else tuple(
            f"{r:.3f}" for r in quality(name, files[name]))
        cells = " | ".join(f"{np.percentile(ms[name, n], 50):.2f} / "
                           f"{np.percentile(ms[name, n], 99):.2f}" for n in LENGTHS)
        rows.append(f"| {name} | {cells} | {rate:.0f} | {recall[0]} / {recall[1]} | "
                    f"{cos.min():.4f} / {cos.mean():.4f} |")
    print(f"{args.rounds} rounds per length; import of {args.memories} memories, gates on; "
          f"load average {before:.2f} before, {os.getloadavg()[0]:.2f} after, "
          f"{os.cpu_count()} cores\n")
    head = " | ".join(f"{n} tok p50 / p99 ms" for n in LENGTHS)
    print(f"| graph | {head} | import memories/s | LongMemEval held-out hybrid turn / "
          "session R@10 | cosine to fp32, lowest / mean |")
    print("|---|" + "---|" * (len(LENGTHS) + 3))
    print("\n".join(rows))


if __name__ == "__main__":
    with recorded("embed_variants"):
        main()
