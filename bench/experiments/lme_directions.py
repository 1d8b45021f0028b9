"""Directions measured beside ``channel_diversity`` on LongMemEval, and dropped
(docs/decisions/0012-channel-diversity.md):

- channel evidence: a fused-score term for how well the hit's whole channel (its session)
  matches the query: the best / summed / top-2 fused, BM25 or cosine score of the channel's
  candidates in the pool, the best of the *other* candidates of its channel, a BM25 index over
  each channel's concatenated text (also adding the turns of its top channels to the pool),
  or the cosine of the channel's mean embedding;
- lexical pseudo-relevance feedback (RM3) on BM25: the query plus the top terms of the top
  BM25 hits, searched again;
- the query's form for the vector side: a question rewritten as a statement before it is
  embedded (the wh-word and its auxiliary dropped, "?" dropped);
- a similarity spread (maximal marginal relevance): the top 10 picked one at a time, each
  candidate held back by its highest cosine to a hit already picked, alone and with the
  channel spread of ``channel_diversity``;
- a question split into clauses (commas, "and", "or", "between"), each searched by BM25 on
  its own beside the whole question.

    .venv/bin/python bench/experiments/lme_directions.py [--held] [--only channel rm3 ... clauses]
    .venv/bin/python bench/experiments/lme_directions.py --rm3-cost bench/.cache/speed_100000

In numpy over the cached embeddings (``minilm-int8``) and the engine's own BM25 index, outside
the engine: the default score fusion redone here (vector and BM25 top 20, every candidate's
cosine, ``max`` normalisation, lexical share 0.7) gives the engine's tune-half figures to the
third decimal (turn R@10 0.693, MRR 0.552, session R@10 0.789). Tune half unless ``--held``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent.parent))

import numpy as np  # noqa: E402
from lme_data import Question, cached_embeddings, load_oracle, pooled_turns, questions  # noqa: E402
from lme_metrics import Scores, mean, session_level, turn_level  # noqa: E402

from kernels.bm25 import bm25_accumulate  # noqa: E402
from sidecar.retrieval.lexical import persist as lexical_persist  # noqa: E402
from sidecar.retrieval.lexical.bm25 import BM25Index, top_k  # noqa: E402
from sidecar.retrieval.lexical.tokenize import Analyzer  # noqa: E402

MODEL = "minilm-int8"
SEED = 20261122
LIMIT = 20  # search_limit
SHARE = 0.7  # lexical_share
Ranking = tuple[np.ndarray, np.ndarray]  # pool labels, their fused scores


def bm25_index(texts: list[str]) -> BM25Index:
    index = BM25Index(1.5, 0.5, 0.25, analyzer=Analyzer(True), background_merge=False)
    index.add(list(range(len(texts))), texts, bulk=True)
    index.merge()
    return index


def by_max(x: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Score fusion's ``max`` normalisation (absent: 0)."""
    hi = x[present].max() if present.any() else 0.0
    return np.where(present, x / hi, 0.0) if hi > 0 else np.zeros_like(x)


class Corpus:
    def __init__(self) -> None:
        data = load_oracle()
        self.turns = [t for t in pooled_turns(data, ("user", "assistant")) if t.role == "user"]
        self.vectors = cached_embeddings([t.content for t in self.turns], "lme_turns_user",
                                         MODEL).astype(np.float32)
        qs = questions(data)
        order = np.random.default_rng(SEED).permutation(len(qs))
        self.tune = [qs[i] for i in order[: len(qs) // 2]]
        self.held = [qs[i] for i in order[len(qs) // 2:]]
        every = self.tune + self.held
        self.qvec = dict(zip([q.id for q in every], cached_embeddings(
            [q.text for q in every], f"lme_q_{len(every)}", MODEL), strict=True))
        stored = {t.id for t in self.turns if t.has_answer}
        self.evidence = {q.id: {t for t in stored if t.split("#", 1)[0] in q.evidence_sessions}
                         for q in qs}
        sessions = sorted({t.session_id for t in self.turns})
        index = {s: i for i, s in enumerate(sessions)}
        self.channel = np.array([index[t.session_id] for t in self.turns], np.int64)
        self.bm25 = bm25_index([t.content for t in self.turns])
        self.channel_bm25 = bm25_index(["\n".join(t.content for t in self.turns
                                                  if t.session_id == s) for s in sessions])
        centroid = np.zeros((len(sessions), self.vectors.shape[1]), np.float32)
        np.add.at(centroid, self.channel, self.vectors)
        self.centroid = centroid / np.linalg.norm(centroid, axis=1, keepdims=True)

    def evaluate(self, rank: Callable[[Question], Ranking], part: list[Question]
                 ) -> tuple[Scores, Scores]:
        turns, sessions = [], []
        for q in part:
            pool, fused = rank(q)
            top = [self.turns[i].id for i in pool[np.lexsort((pool, -fused))][:10]]
            turns.append(turn_level(top, self.evidence[q.id]))
            sessions.append(session_level(top, set(q.evidence_sessions)))
        return mean(turns), mean(sessions)


class Pool:
    """One query's candidates: vector top 20 and a lexical top 20, every cosine."""

    def __init__(self, cos_all: np.ndarray, lexical: Ranking,
                 extra: np.ndarray | None = None) -> None:
        """``cos_all``: the query's cosine to every memory; ``extra``: more labels to pool."""
        self.cos_all, self.lexical = cos_all, lexical
        vector = np.argsort(-cos_all, kind="stable")[:LIMIT]
        self.labels = np.unique(np.concatenate(
            [vector, lexical[0], np.zeros(0, np.int64) if extra is None else extra]))
        self.cos = self.cos_all[self.labels]
        self.listed = np.isin(self.labels, lexical[0])
        self.bm25 = np.zeros(len(self.labels))
        self.bm25[np.searchsorted(self.labels, lexical[0])] = lexical[1]

    def fused(self) -> np.ndarray:
        every = np.ones(len(self.labels), bool)
        return (1 - SHARE) * by_max(self.cos, every) + SHARE * by_max(self.bm25, self.listed)


def per_channel(channels: np.ndarray, x: np.ndarray, how: str) -> np.ndarray:
    """Each candidate's channel's best / sum / top-2 sum of ``x`` over the pool, or "others":
    the best of the other candidates of its channel (0 when alone)."""
    out = np.zeros(len(x))
    for i, c in enumerate(channels):
        same = channels == c
        if how == "others":
            same[i] = False
            out[i] = x[same].max() if same.any() else 0.0
            continue
        values = np.sort(x[same])[::-1]
        out[i] = {"max": values[0], "sum": values.sum(), "top2": values[:2].sum()}[how]
    return out


def channel_rows(corpus: Corpus, part: list[Question]) -> list[tuple[str, Callable]]:
    pools = {q.id: Pool(corpus.vectors @ corpus.qvec[q.id], corpus.bm25.search(q.text, LIMIT))
             for q in part}
    whole = {}
    for q in part:
        labels, scores = corpus.channel_bm25.scores(q.text)
        whole[q.id] = np.zeros(len(corpus.centroid))
        whole[q.id][labels] = scores

    def pooled(how: str, of: str, w: float) -> Callable[[Question], Ranking]:
        def rank(q: Question) -> Ranking:
            p = pools[q.id]
            every = np.ones(len(p.labels), bool)
            x = {"fused": p.fused(), "bm25": by_max(p.bm25, p.listed),
                 "cosine": by_max(p.cos, every)}[of]
            extra = per_channel(corpus.channel[p.labels], x, how)
            return p.labels, p.fused() + w * (extra if how == "others" else by_max(extra, every))
        return rank

    def channel_text(w: float, expand: int) -> Callable[[Question], Ranking]:
        def rank(q: Question) -> Ranking:
            p, score = pools[q.id], whole[q.id]
            if expand:  # every turn of the top channels joins the pool (BM25 0, its cosine)
                top = np.argsort(-score, kind="stable")[:expand]
                p = Pool(p.cos_all, p.lexical, np.flatnonzero(np.isin(corpus.channel, top)))
            c = score[corpus.channel[p.labels]]
            return p.labels, p.fused() + w * by_max(c, c > 0)
        return rank

    def centroid(w: float) -> Callable[[Question], Ranking]:
        def rank(q: Question) -> Ranking:
            p = pools[q.id]
            c = corpus.centroid[corpus.channel[p.labels]] @ corpus.qvec[q.id]
            return p.labels, p.fused() + w * by_max(c, np.ones(len(c), bool))
        return rank

    rows: list[tuple[str, Callable]] = [("default fusion", pooled("max", "fused", 0.0))]
    for how in ("max", "sum", "top2"):
        for of in ("fused", "bm25", "cosine"):
            rows += [(f"pool: channel's {how} {of} score x {w}", pooled(how, of, w))
                     for w in (0.1, 0.2, 0.3, 0.5)]
    rows += [(f"pool: best other candidate of the channel x {w}", pooled("others", "fused", w))
             for w in (0.1, 0.2, 0.3, 0.5)]
    for expand in (0, 5, 10):
        rows += [(f"channel-text BM25 x {w}, top {expand} channels' turns added",
                  channel_text(w, expand)) for w in (0.1, 0.2, 0.3, 0.5, 0.8)]
    rows += [(f"channel mean-embedding cosine x {w}", centroid(w)) for w in (0.1, 0.2, 0.3)]
    return rows


def weighted_bm25(index: BM25Index, weights: dict[str, float], k: int) -> Ranking:
    """BM25 top k of a query whose terms carry weights (each term's idf x its weight)."""
    terms = list(weights)
    ids, idf = index._idf_locked(terms)
    idf = idf * np.array([weights[t] for t in terms])
    view = index._view()
    scores, seen, touched = index._buffers(view.n_docs)
    count = 0
    for seg in view.segments:
        count = bm25_accumulate(seg.arrays, view.doc_len, view.alive, ids, idf, index.k1,
                                index.b, view.avgdl, scores, seen, touched, count)
    docs = touched[:count].copy()
    labels, found = view.doc_label[docs], scores[docs].copy()
    scores[docs], seen[docs] = 0.0, 0
    return top_k(labels, found, k)


def rm3(index: BM25Index, text: str, docs: int, terms: int, lam: float) -> dict[str, float]:
    """RM3: (1 - lam) x the query's terms + lam x the top ``terms`` of the relevance model
    of the top ``docs`` BM25 hits (term frequency / length, weighted by the hit's score)."""
    query = index.analyzer.query_terms(text)
    weights = {t: (1 - lam) * query.count(t) / len(query) for t in query}
    labels, scores = index.search(text, docs)
    vocabulary = list(index._vocab)
    model: dict[str, float] = {}
    for label, score in zip(labels.tolist(), (scores / scores.sum()).tolist(), strict=True):
        doc = index._label_doc[label]
        term_ids, tfs = index._doc_terms[doc]  # type: ignore[misc]
        for tid, tf in zip(term_ids.tolist(), tfs.tolist(), strict=True):
            if not index._stop[tid]:
                term = vocabulary[tid]
                model[term] = model.get(term, 0.0) + score * tf / index._doc_len[doc]
    best = sorted(model.items(), key=lambda kv: -kv[1])[:terms]
    total = sum(v for _, v in best)
    for term, v in best:
        weights[term] = weights.get(term, 0.0) + lam * v / total
    return weights


def rm3_rows(corpus: Corpus, part: list[Question]) -> list[tuple[str, Callable]]:
    def rank(docs: int, terms: int, lam: float, lexical_only: bool
             ) -> Callable[[Question], Ranking]:
        def run(q: Question) -> Ranking:
            weights = rm3(corpus.bm25, q.text, docs, terms, lam)
            p = Pool(corpus.vectors @ corpus.qvec[q.id],
                     weighted_bm25(corpus.bm25, weights, LIMIT))
            return p.labels, by_max(p.bm25, p.listed) if lexical_only else p.fused()
        return run

    rows: list[tuple[str, Callable]] = [("BM25 alone", rank(1, 0, 0.0, True)),
                                        ("default fusion", rank(1, 0, 0.0, False))]
    for docs in (3, 5, 10):
        for terms in (5, 10, 20):
            for lam in (0.2, 0.4, 0.6):
                name = f"RM3 {docs} docs, {terms} terms, weight {lam}"
                rows += [(f"{name}, BM25 alone", rank(docs, terms, lam, True)),
                         (f"{name}, hybrid", rank(docs, terms, lam, False))]
    return rows


_WH = r"(?:what|which|who|whom|whose|where|when|why|how(?:\s+(?:many|much|long|often|old|far))?)"
_AUX = r"(?:is|was|are|were|did|do|does|have|has|had|can|could|would|will|should|'s)"
REWRITES = {
    "drop wh-word + auxiliary, '?' -> '.'":
        re.compile(rf"(^|(?<=[.!?]\s))\s*{_WH}\s+{_AUX}\b\s*", re.I),
    "drop wh-word (+ one word) + auxiliary, '?' -> '.'":
        re.compile(rf"(^|(?<=[.!?]\s))\s*{_WH}\b(?:\s+\w+)??\s+{_AUX}\b\s*", re.I),
    "only '?' -> '.'": None,
}


def rewrite_rows(corpus: Corpus, part: list[Question]) -> list[tuple[str, Callable]]:
    every = corpus.tune + corpus.held

    def rank(qv: dict[str, np.ndarray], vector_only: bool) -> Callable[[Question], Ranking]:
        def run(q: Question) -> Ranking:
            p = Pool(corpus.vectors @ qv[q.id], corpus.bm25.search(q.text, LIMIT))
            if vector_only:
                return p.labels, p.cos
            return p.labels, p.fused()
        return run

    rows: list[tuple[str, Callable]] = [("question as asked, vector alone",
                                         rank(corpus.qvec, True)),
                                        ("question as asked, hybrid", rank(corpus.qvec, False))]
    for n, (name, pattern) in enumerate(REWRITES.items(), 1):
        texts = [(pattern.sub(lambda m: m.group(1), q.text) if pattern else q.text)
                 .replace("?", ".").strip() for q in every]
        qv = dict(zip([q.id for q in every], cached_embeddings(
            texts, f"lme_qrw{n}_{len(texts)}", MODEL), strict=True))
        rows += [(f"{name}, vector alone", rank(qv, True)), (f"{name}, hybrid", rank(qv, False))]
    return rows


def reselect(corpus: Corpus, labels: np.ndarray, fused: np.ndarray, channel: float,
             similar: float, k: int = 10) -> Ranking:
    """The top k picked one at a time: fused score minus the best's score x (``channel`` x
    hits already picked from its channel + ``similar`` x its highest cosine to a hit
    picked), the earlier in fusion order on ties. As a ranking: the picks, descending."""
    order = list(np.lexsort((labels, -fused)))
    best = fused[order[0]]
    rows = corpus.vectors[labels]
    channels = corpus.channel[labels]
    closest = np.zeros(len(labels))  # highest cosine to a hit picked (0 before the first)
    same = np.zeros(len(labels))  # hits picked from the candidate's channel
    picked: list[int] = []
    while order and len(picked) < k:
        effective = fused - best * (channel * same + similar * np.maximum(closest, 0.0))
        pick = order[int(np.argmax(effective[order]))]  # the first best in fusion order
        order.remove(pick)
        picked.append(pick)
        same += channels == channels[pick]
        closest = np.maximum(closest, rows @ rows[pick])
    return labels[picked], -np.arange(len(picked), dtype=np.float64)


def similarity_rows(corpus: Corpus, part: list[Question]) -> list[tuple[str, Callable]]:
    pools = {q.id: Pool(corpus.vectors @ corpus.qvec[q.id], corpus.bm25.search(q.text, LIMIT))
             for q in part}

    def rank(channel: float, similar: float) -> Callable[[Question], Ranking]:
        def run(q: Question) -> Ranking:
            p = pools[q.id]
            return reselect(corpus, p.labels, p.fused(), channel, similar)
        return run

    return [(f"channel spread {channel}, similarity spread {similar}", rank(channel, similar))
            for channel in (0.0, 0.03, 0.05, 0.07, 0.1)
            for similar in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)]


CLAUSE = re.compile(r",|;|:|\bor\b|\band\b|\bthen\b|\bbetween\b", re.I)


def clause_rows(corpus: Corpus, part: list[Question]) -> list[tuple[str, Callable]]:
    """A question naming several things ("the necklace for my sister or the photo album for
    my mom") split at commas and conjunctions; each clause of at least ``least`` query terms
    searched by BM25 on its own (top ``limit``), a candidate's BM25 term the best of the
    whole question's normalised score and ``weight`` x each clause's."""
    def rank(weight: float, limit: int, least: int) -> Callable[[Question], Ranking]:
        def run(q: Question) -> Ranking:
            whole = corpus.bm25.search(q.text, LIMIT)
            lists = [(whole[0], whole[1] / whole[1].max() if len(whole[1]) else whole[1])]
            clauses = [c for c in CLAUSE.split(q.text)
                       if len(corpus.bm25.analyzer.query_terms(c)) >= least]
            for clause in clauses if len(clauses) >= 2 else []:
                labels, scores = corpus.bm25.search(clause, limit)
                if len(labels):
                    lists.append((labels, weight * scores / scores.max()))
            p = Pool(corpus.vectors @ corpus.qvec[q.id], whole,
                     np.concatenate([labels for labels, _ in lists]))
            lexical = np.zeros(len(p.labels))
            for labels, scores in lists:
                at = np.searchsorted(p.labels, labels)
                lexical[at] = np.maximum(lexical[at], scores)
            return p.labels, (1 - SHARE) * by_max(p.cos, np.ones(len(p.labels), bool)) \
                + SHARE * lexical
        return run

    return [(f"clauses of >= {least} terms, weight {weight}, top {limit} each",
             rank(weight, limit, least))
            for least in (1, 2) for weight in (0.5, 0.7, 0.85, 1.0) for limit in (10, 20)]


DIRECTIONS = {"channel": channel_rows, "rm3": rm3_rows, "rewrite": rewrite_rows,
              "similarity": similarity_rows, "clauses": clause_rows}


def rm3_cost(data_dir: Path, corpus: Corpus, docs: int = 5, terms: int = 20) -> None:
    """CPU per question of BM25 top 20 alone vs with RM3 (first pass, relevance model,
    second pass) over the BM25 postings saved in ``data_dir`` (``bench/search_speed.py``'s
    stores), all 470 questions, in process."""
    path = data_dir / "lexical.npz"
    meta = json.loads(lexical_persist.meta_path(path).read_text(encoding="utf-8"))
    analyser = meta.get("analyser", "plain")
    postings, why = lexical_persist.load(path, meta["content_checksum"], analyser)
    if postings is None:
        raise SystemExit(f"{path}: {why}")
    index = BM25Index(1.5, 0.5, 0.25, analyzer=Analyzer(analyser != "plain"),
                      background_merge=False)
    index.restore(postings)
    texts = [q.text for q in corpus.tune + corpus.held]

    def per_query(run: Callable[[str], object]) -> np.ndarray:
        spent = []
        for text in texts:
            start = time.thread_time()
            run(text)
            spent.append((time.thread_time() - start) * 1000)
        return np.array(spent)

    plain = per_query(lambda t: index.search(t, LIMIT))
    plain = per_query(lambda t: index.search(t, LIMIT))  # the first round warmed the kernel
    fed = per_query(lambda t: weighted_bm25(index, rm3(index, t, docs, terms, 0.2), LIMIT))
    print(f"\nBM25 top {LIMIT} over {len(index):,} memories ({analyser}), CPU ms per question "
          f"p50 / p95: alone {np.median(plain):.2f} / {np.percentile(plain, 95):.2f}, "
          f"with RM3 ({docs} docs, {terms} terms) {np.median(fed):.2f} / "
          f"{np.percentile(fed, 95):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--held", action="store_true", help="the held-out half (not to choose)")
    parser.add_argument("--only", nargs="+", choices=sorted(DIRECTIONS), default=list(DIRECTIONS))
    parser.add_argument("--rm3-cost", type=Path, metavar="DATA_DIR",
                        help="only RM3's cost over the BM25 postings saved in DATA_DIR "
                             "(e.g. bench/.cache/speed_100000)")
    args = parser.parse_args()
    corpus = Corpus()
    if args.rm3_cost:
        rm3_cost(args.rm3_cost, corpus)
        return
    part = corpus.held if args.held else corpus.tune
    for name in args.only:
        print(f"\n{name}, {'held-out' if args.held else 'tune'} half:\n")
        print("| variant | turn R@5 | turn R@10 | turn MRR | session R@10 | session hit@5 |\n"
              "|---|---|---|---|---|---|")
        for label, rank in DIRECTIONS[name](corpus, part):
            t, s = corpus.evaluate(rank, part)
            print(f"| {label} | {t.r5:.3f} | {t.r10:.3f} | {t.mrr:.3f} | {s.r10:.3f} "
                  f"| {s.hit5:.3f} |")


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    flags = [a[2:].replace("-", "_") for a in sys.argv[1:] if a in ("--held", "--rm3-cost")]
    with recorded("_".join(["lme_directions", *flags])):
        main()
