"""Search quality on LongMemEval (oracle set): recall@5/@10, MRR at turn and session level.

    .venv/bin/python bench/longmemeval_quality.py            # report (default settings, gRPC)
    .venv/bin/python bench/longmemeval_quality.py --tune     # + the RRF grid on the tune half
    .venv/bin/python bench/longmemeval_quality.py --tune-fusion  # RRF vs score fusion grid
    .venv/bin/python bench/longmemeval_quality.py --turns all  # pool assistant turns too
    .venv/bin/python bench/longmemeval_quality.py --model minilm-int8  # another [embedding] model
    .venv/bin/python bench/longmemeval_quality.py --stemming both  # bm25_stemming off vs on
    .venv/bin/python bench/longmemeval_quality.py --tune-bm25 --stemming both  # k1/b, tune half
    .venv/bin/python bench/longmemeval_quality.py --tune-diversity  # channel_diversity grid
    .venv/bin/python bench/longmemeval_quality.py --channels both  # channel_id empty, then set
    .venv/bin/python bench/longmemeval_quality.py --channels conversation --channel-diversity 0

All sessions of the 500 questions are pooled into one store, one memory per turn, its
``channel_id`` the session (``--channels off``: empty, ``both``: the report for each;
``conversation``: the question's conversation, i.e. every session of its haystack under one
channel, a session several questions share under the first of them). The 470
non-abstention questions are split in two halves with a fixed seed: settings are chosen on the
"tune" half only, and the report shows the other ("held-out") half and all 470. The report
runs every question through the real ``Search`` RPC (the server embeds the query).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from lme_data import (  # noqa: E402
    CACHE,
    Question,
    cached_embeddings,
    load_oracle,
    pooled_turns,
    questions,
    store_suffix,
)
from lme_diversity import tune_diversity  # noqa: E402
from lme_fusion import tune_fusion  # noqa: E402
from lme_metrics import Scores, mean, session_level, turn_level  # noqa: E402
from memsidecar.v1 import store_pb2  # noqa: E402
from store_build import Served, build_store  # noqa: E402

from sidecar.embedding import Embedder  # noqa: E402
from sidecar.embedding.models import FP32, MODEL_NAMES, model_files  # noqa: E402
from sidecar.live import Live  # noqa: E402
from sidecar.retrieval.config import RRF, RetrievalConfig  # noqa: E402
from sidecar.retrieval.contract import Mode, SearchQuery  # noqa: E402
from sidecar.retrieval.hybrid import HybridRetriever  # noqa: E402
from sidecar.store.db import Database  # noqa: E402
from sidecar.store.repos import Repositories

MODES = {"VECTOR": store_pb2.SEARCH_MODE_VECTOR, "LEXICAL": store_pb2.SEARCH_MODE_LEXICAL,
         "HYBRID": store_pb2.SEARCH_MODE_HYBRID}
ROLES = {"user": ("user",), "all": ("user", "assistant")}
OFF, SESSION, CONVERSATION = "empty", "= session", "= conversation"
CHANNELS = {"on": [SESSION], "off": [OFF], "both": [OFF, SESSION],
            "conversation": [CONVERSATION]}
STEMMING = {"default": [RetrievalConfig().bm25_stemming], "off": [False], "on": [True],
            "both": [False, True]}


def split(qs: list[Question], seed: int) -> tuple[list[Question], list[Question]]:
    order = np.random.default_rng(seed).permutation(len(qs))
    half = len(qs) // 2
    return [qs[i] for i in order[:half]], [qs[i] for i in order[half:]]


def evaluate(ranked: dict[str, list[str]], qs: list[Question],
             evidence: dict[str, set[str]]) -> tuple[Scores, Scores]:
    turns = [turn_level(ranked[q.id], evidence[q.id]) for q in qs]
    sessions = [session_level(ranked[q.id], set(q.evidence_sessions)) for q in qs]
    return mean(turns), mean(sessions)


def row(name: str, t: Scores, s: Scores) -> str:
    return (f"| {name} | {t.r5:.3f} | {t.r10:.3f} | {t.mrr:.3f} | {s.r5:.3f} | {s.r10:.3f} "
            f"| {s.mrr:.3f} | {s.hit5:.3f} |")


HEADER = ("| mode | turn R@5 | turn R@10 | turn MRR | session R@5 | session R@10 | session MRR "
          "| session hit@5 |\n|---|---|---|---|---|---|---|---|")


def tune(data_dir: Path, embedder: Embedder, qs: list[Question],
         evidence: dict[str, set[str]]) -> None:
    """The settings grid, in process (same engine, precomputed query embeddings).

    A setting's margin = min over {turn, session} of HYBRID R@10 minus the best single source's
    R@10 (both single sources with the same BM25 settings); best margin first.
    """
    vecs = cached_embeddings([q.text for q in qs], f"lme_q_{len(qs)}")
    db = Database(data_dir / "memsidecar.sqlite3")
    base = RetrievalConfig(fusion=RRF)  # the RRF grid of docs/decisions/0005

    def run(engine: HybridRetriever, mode: Mode) -> tuple[Scores, Scores]:
        ranked = {q.id: [h.memory.id for h in engine.search(
            SearchQuery(q.text, limit=10, embedding=v, mode=mode)).hits]
            for q, v in zip(qs, vecs, strict=True)}
        return evaluate(ranked, qs, evidence)

    results = []
    current = [base]  # the engine's config; the tuning loop swaps it
    for b in (0.4, 0.5, 0.6, 0.75):
        current = [replace(base, bm25_b=b)]  # the engine reads it per search, like a reload
        engine = HybridRetriever(embedder, Live(lambda c=current: c[0]))
        repos = Repositories.open(db)
        engine.load(repos.memories, repos.edges)
        vt, vs = run(engine, Mode.VECTOR)
        lt, ls = run(engine, Mode.LEXICAL)
        print(f"tune half bm25_b={b}: VECTOR turn/session R@10 {vt.r10:.3f}/{vs.r10:.3f}, "
              f"LEXICAL {lt.r10:.3f}/{ls.r10:.3f}")
        for k in (5.0, 10.0, 20.0, 30.0, 60.0):
            for w in (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0):
                cfg = replace(base, lexical_weight=w, rrf_k=k, bm25_b=b)
                current[0] = cfg
                t, s = run(engine, Mode.HYBRID)
                margin = min(t.r10 - max(vt.r10, lt.r10), s.r10 - max(vs.r10, ls.r10))
                results.append((margin, cfg, t, s))
    print("\nTune half, HYBRID, best 15 by margin over the best single source:\n")
    print("| lexical_weight | rrf_k | bm25_b | turn R@10 | session R@10 | turn MRR | margin |")
    print("|---|---|---|---|---|---|---|")
    for margin, cfg, t, s in sorted(results, key=lambda r: (-r[0], -r[2].mrr))[:15]:
        print(f"| {cfg.lexical_weight} | {cfg.rrf_k:g} | {cfg.bm25_b} | {t.r10:.3f} "
              f"| {s.r10:.3f} | {t.mrr:.3f} | {margin:+.3f} |")
    db.close()


def tune_bm25(data_dir: Path, embedder: Embedder, qs: list[Question],
               evidence: dict[str, set[str]], stemming: list[bool]) -> None:
    """LEXICAL alone over a k1 x b grid, in process, on the tune half (no query embedding)."""
    db = Database(data_dir / "memsidecar.sqlite3")
    print("\nTune half, LEXICAL:\n")
    print("| bm25_stemming | bm25_k1 | bm25_b | turn R@10 | session R@10 | turn MRR |")
    print("|---|---|---|---|---|---|")
    for stem in stemming:
        for k1 in (0.9, 1.2, 1.5, 2.0):
            for b in (0.3, 0.5, 0.75):
                cfg = RetrievalConfig(bm25_k1=k1, bm25_b=b, bm25_stemming=stem)
                engine = HybridRetriever(embedder, Live.fixed(cfg))
                repos = Repositories.open(db)
                engine.load(repos.memories, repos.edges)
                ranked = {q.id: [h.memory.id for h in engine.search(
                    SearchQuery(q.text, limit=10, mode=Mode.LEXICAL)).hits] for q in qs}
                engine.close()
                t, s = evaluate(ranked, qs, evidence)
                print(f"| {stem} | {k1} | {b} | {t.r10:.3f} | {s.r10:.3f} | {t.mrr:.3f} |")
    db.close()


def by_type(ranked: dict[str, list[str]], held: list[Question],
            evidence: dict[str, set[str]]) -> list[str]:
    """Rows of turn R@10 / session R@10 / turn MRR per question type."""
    rows = []
    for kind in sorted({q.type for q in held}):
        part = [q for q in held if q.type == kind]
        t, s = evaluate(ranked, part, evidence)
        rows.append(f"| {kind} ({len(part)}) | {t.r5:.3f} | {t.r10:.3f} | {t.mrr:.3f} "
                    f"| {s.r5:.3f} | {s.r10:.3f} |")
    return rows


def report(data_dir: Path, embedder: Embedder, qs: list[Question], held: list[Question],
           evidence: dict[str, set[str]], retrieval: RetrievalConfig, channels: str) -> None:
    served = Served(data_dir, embedder, retrieval, embedder.name)
    print(f"\nserver opened the store in {served.open_s:.1f} s, vector index "
          f"{served.vector_stats}")
    tables: dict[str, list[str]] = {"held-out half": [], "all 470": []}
    kinds: dict[str, list[str]] = {}
    try:
        for name, mode in MODES.items():
            start = time.perf_counter()
            ranked = {}
            for q in qs:
                reply = served.store.Search(store_pb2.SearchRequest(query=q.text, limit=10,
                                                                    mode=mode))
                ranked[q.id] = [h.memory.id for h in reply.hits]
            spent = time.perf_counter() - start
            print(f"{name}: {len(qs)} searches in {spent:.1f} s", file=sys.stderr)
            tables["held-out half"].append(row(name, *evaluate(ranked, held, evidence)))
            tables["all 470"].append(row(name, *evaluate(ranked, qs, evidence)))
            kinds[name] = by_type(ranked, held, evidence)
    finally:
        served.close()
    setting = (f"bm25_stemming={retrieval.bm25_stemming}, channel_id {channels}, "
               f"channel_diversity {retrieval.channel_diversity:g}")
    for title, rows in tables.items():
        print(f"\n{title} ({setting}, other knobs default, Search over gRPC, limit 10):\n")
        print(HEADER)
        print("\n".join(rows))
    for name, rows in kinds.items():
        print(f"\nheld-out half by question type, {name} ({setting}):\n")
        print("| type (questions) | turn R@5 | turn R@10 | turn MRR | session R@5 | session R@10 |"
              "\n|---|---|---|---|---|---|")
        print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", choices=sorted(ROLES), default="user")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--tune", action="store_true")
    parser.add_argument("--tune-only", action="store_true")
    parser.add_argument("--model", choices=MODEL_NAMES, default=FP32)
    parser.add_argument("--stemming", choices=sorted(STEMMING), default="default",
                        help="[retrieval] bm25_stemming of the report (both: off, then on)")
    parser.add_argument("--tune-bm25", action="store_true",
                        help="first the LEXICAL k1 x b grid on the tune half")
    parser.add_argument("--tune-fusion", action="store_true",
                        help="first the RRF vs score fusion grid on the tune half")
    parser.add_argument("--tune-diversity", action="store_true",
                        help="first the channel_diversity grid on the tune half")
    parser.add_argument("--channels", choices=sorted(CHANNELS), default="on",
                        help="memories' channel_id: the session (on), empty (off), both, or "
                             "the question's conversation")
    parser.add_argument("--channel-diversity", type=float, default=None,
                        help="[retrieval] channel_diversity of the report (default: its default)")
    args = parser.parse_args()

    data = load_oracle()
    every = pooled_turns(data, ROLES["all"])
    keep = [i for i, t in enumerate(every) if t.role in ROLES[args.turns]]
    turns = [every[i] for i in keep]
    vectors = cached_embeddings([t.content for t in turns], f"lme_turns_{args.turns}",
                                args.model)
    suffix = store_suffix(args.model)
    conversation = {}
    for n, item in enumerate(data):
        for sid in item["haystack_session_ids"]:
            conversation.setdefault(sid, f"lme-{n}")
    channel_of = {OFF: lambda t: "", SESSION: lambda t: t.session_id,
                  CONVERSATION: lambda t: conversation[t.session_id]}
    tails = {OFF: "", SESSION: "_channels", CONVERSATION: "_conversations"}
    dirs = {}
    for kind, tail in tails.items():
        dirs[kind] = CACHE / f"lme_store_{args.turns}{suffix}{tail}"
        if kind in CHANNELS[args.channels] or (kind == SESSION and args.tune_diversity):
            build_store(dirs[kind], [t.id for t in turns], [t.content for t in turns], vectors,
                        model=args.model, channels=[channel_of[kind](t) for t in turns])
    data_dir = dirs[CHANNELS[args.channels][-1]]

    qs = questions(data)
    stored = {t.id for t in turns if t.has_answer}
    evidence = {q.id: {t for t in stored if t.split("#", 1)[0] in q.evidence_sessions}
                for q in qs}
    tune_half, held = split(qs, args.seed)
    no_turn = sum(1 for q in qs if not evidence[q.id])
    print(f"{len(turns)} memories ({args.turns} turns of {len({t.session_id for t in turns})} "
          f"sessions), {len(qs)} questions ({no_turn} without an evidence turn in the store: "
          f"left out of turn-level means), tune/held-out {len(tune_half)}/{len(held)}")
    print(f"embedding model {args.model}")
    embedder = Embedder(model_files(args.model))
    if args.tune:
        tune(data_dir, embedder, tune_half, evidence)
        if args.tune_only:
            return
    if args.tune_bm25:
        tune_bm25(data_dir, embedder, tune_half, evidence, STEMMING[args.stemming])
    if args.tune_fusion:
        tune_fusion(data_dir, embedder, args.model, tune_half, held,
                    lambda ranked, part: evaluate(ranked, part, evidence))
        if args.tune_only:
            return
    if args.tune_diversity:
        tune_diversity(dirs[SESSION], embedder, args.model, tune_half, held,
                       lambda ranked, part: evaluate(ranked, part, evidence))
        if args.tune_only:
            return
    for kind in CHANNELS[args.channels]:
        for stem in STEMMING[args.stemming]:
            retrieval = RetrievalConfig(bm25_stemming=stem)
            if args.channel_diversity is not None:
                retrieval = replace(retrieval, channel_diversity=args.channel_diversity)
            report(dirs[kind], embedder, qs, held, evidence, retrieval, kind)


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    with recorded("longmemeval_quality"):
        main()
