"""Slow, obviously-correct references for the fast paths (kernels, indexes)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from sidecar.records import Edge, Relation, Viewer
from sidecar.retrieval.contract import Accept, Retriever
from sidecar.retrieval.mirror import LiveMemories


def bm25_scores(
    docs: list[list[str]], query: list[str], k1: float = 1.5, b: float = 0.75,
    epsilon: float = 0.25,
) -> list[float]:
    """BM25 Okapi written out term by term (rank-bm25's idf floor)."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df: dict[str, int] = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log(n - f + 0.5) - math.log(f + 0.5) for t, f in df.items()}
    mean = sum(idf.values()) / len(idf)
    idf = {t: (epsilon * mean if v < 0 else v) for t, v in idf.items()}
    out = []
    for d in docs:
        s = 0.0
        for q in query:
            tf = d.count(q)
            s += idf.get(q, 0.0) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return out


def rrf(
    ranks: np.ndarray, weights: np.ndarray, k: float, importance: np.ndarray,
    age_s: np.ndarray, alpha: float, beta: float, half_life_s: float, labels: np.ndarray,
) -> tuple[list[float], list[int]]:
    scores = []
    for i in range(len(labels)):
        s = sum(weights[j] / (k + ranks[i][j]) for j in range(len(weights)) if ranks[i][j] > 0)
        s += alpha * importance[i] + beta * 0.5 ** (max(age_s[i], 0.0) / half_life_s)
        scores.append(s)
    order = sorted(range(len(labels)), key=lambda i: (-scores[i], labels[i]))
    return scores, order


def score_fusion(
    values: np.ndarray, present: np.ndarray, weights: np.ndarray, normalisation: str,
    importance: np.ndarray, age_s: np.ndarray, alpha: float, beta: float, half_life_s: float,
    labels: np.ndarray,
) -> tuple[list[float], list[int]]:
    n, sources = values.shape
    scores = [0.0] * n
    for s in range(sources):
        seen = [float(values[i][s]) for i in range(n) if present[i][s]]
        if not seen or (normalisation == "max" and max(seen) <= 0):
            continue
        if normalisation == "max":
            column = [float(values[i][s]) / max(seen) if present[i][s] else 0.0
                      for i in range(n)]
        elif max(seen) == min(seen):
            column = [1.0 if present[i][s] else 0.0 for i in range(n)]
        else:
            if normalisation == "minmax":
                centre, spread = min(seen), max(seen) - min(seen)
            else:
                centre = sum(seen) / len(seen)
                spread = math.sqrt(sum((x - centre) ** 2 for x in seen) / len(seen))
            column = [(float(values[i][s]) if present[i][s] else min(seen)) for i in range(n)]
            column = [(x - centre) / spread for x in column]
        for i in range(n):
            scores[i] += weights[s] * column[i]
    for i in range(n):
        scores[i] += alpha * importance[i] + beta * 0.5 ** (max(age_s[i], 0.0) / half_life_s)
    order = sorted(range(n), key=lambda i: (-scores[i], labels[i]))
    return scores, order


def spread(order: list[int], scores: list[float], groups: list[int], penalty: float,
           limit: int) -> list[int]:
    """Greedy channel spread: each pick maximises score - penalty x (picks of its group so
    far), group 0 never penalised; ties go to the earlier in ``order``."""
    left = list(order)
    picked: list[int] = []
    while left and len(picked) < limit:
        def effective(i: int) -> float:
            same = sum(1 for j in picked if groups[j] != 0 and groups[j] == groups[i])
            return scores[i] - penalty * same

        best = max(left, key=lambda i: (effective(i), -left.index(i)))
        picked.append(best)
        left.remove(best)
    return picked


def pool(lists: list[tuple[list[int], list[float]]]
         ) -> tuple[list[int], list[list[int]], list[list[float]]]:
    """The candidate pool of ranked lists: labels ascending, rank and score in each list
    (0 when absent; a label listed twice keeps its later entry)."""
    labels = sorted({label for found, _ in lists for label in found})
    ranks = [[0] * len(lists) for _ in labels]
    values = [[0.0] * len(lists) for _ in labels]
    for j, (found, scores) in enumerate(lists):
        for rank, (label, score) in enumerate(zip(found, scores, strict=True), start=1):
            i = labels.index(label)
            ranks[i][j], values[i][j] = rank, score
    return labels, ranks, values


def graph_seeds(found: list[list[int]], importance: np.ndarray, threshold: float,
                limit: int) -> list[int]:
    """Graph seeds: distinct labels by best rank over every list, then label; in range of
    ``importance`` and importance >= ``threshold``; at most ``limit``."""
    best: dict[int, int] = {}
    for labels in found:
        for rank, label in enumerate(labels):
            if label not in best or rank < best[label]:
                best[label] = rank
    return [s for s in sorted(best, key=lambda s: (best[s], s))
            if 0 <= s < len(importance) and importance[s] >= threshold][:limit]


class EdgeGraph:
    """Graph expansion over dicts keyed by memory id (``sidecar.retrieval.graph.expansion``)."""

    def __init__(self) -> None:
        self.adj: dict[str, dict[tuple[str, Relation], float]] = {}

    def changed(self, added: Iterable[Edge], removed: Iterable[Edge]) -> None:
        for e in removed:
            self.adj.get(e.source_id, {}).pop((e.target_id, e.relation), None)
            self.adj.get(e.target_id, {}).pop((e.source_id, e.relation), None)
        for e in added:
            self.adj.setdefault(e.source_id, {})[(e.target_id, e.relation)] = e.weight
            self.adj.setdefault(e.target_id, {})[(e.source_id, e.relation)] = e.weight

    def expand(self, seeds: Sequence[int], live: LiveMemories, accept: Accept,
               multipliers: dict[Relation, float], max_depth: int,
               limit: int) -> tuple[list[int], list[float]]:
        if not seeds or max_depth <= 0 or limit <= 0:
            return [], []
        seed_ids = {m.id for s in seeds if (m := live.get(s)) is not None}
        frontier = {i: 1.0 for i in seed_ids}
        best: dict[int, float] = {}
        for _ in range(max_depth):
            reached: dict[str, float] = {}
            for node, factor in frontier.items():
                for (other, relation), weight in self.adj.get(node, {}).items():
                    if other in seed_ids:
                        continue
                    f = factor * weight * multipliers.get(relation, 1.0)
                    if f > reached.get(other, -1.0):
                        reached[other] = f
            frontier = {}
            for other, f in reached.items():
                seq = live.seq_of(other)
                memory = None if seq is None else live.get(seq)
                if memory is None or not accept(np.array([seq], np.int64))[0]:
                    continue
                score = memory.importance * f
                if score > best.get(memory.seq, -1.0):
                    best[memory.seq] = score
                    frontier[other] = f
        ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [s for s, _ in ranked], [score for _, score in ranked]


def top_pairs(vectors: np.ndarray, floor: float, limit: int) -> list[tuple[int, int, float]]:
    """Every pair i < j with its cosine (float64 dot rounded to float32) >= floor (as float32),
    sorted by (-cosine, i, j), cut at ``limit``."""
    bound = float(np.float32(floor))
    pairs = []
    for i in range(len(vectors)):
        for j in range(i + 1, len(vectors)):
            cosine = float(np.float32(np.dot(vectors[i].astype(np.float64),
                                             vectors[j].astype(np.float64))))
            if cosine >= bound:
                pairs.append((i, j, cosine))
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs[:limit]


def bm25_with_context(
    docs: list[list[str]], query: list[str], context: list[tuple[list[str], float]],
    max_terms: int, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25,
) -> dict[int, float]:
    """A query's BM25 scores with its context added (``BM25Index.with_context``), written out:
    each context term once at its largest weight, the ``max_terms`` of highest idf x weight;
    their scores scaled so that the best is the largest weight x the best own score (1 when no
    document holds an own term); own scores alone when either best is not positive. Keys:
    the documents holding an own or a kept context term."""
    n = len(docs)
    own = bm25_scores(docs, query, k1, b, epsilon)
    weights: dict[str, float] = {}
    for terms, weight in context:
        for t in dict.fromkeys(terms):
            weights[t] = max(weight, weights.get(t, 0.0))
    df = {t: sum(1 for d in docs if t in d) for d in docs for t in d}
    raw = {t: math.log(n - f + 0.5) - math.log(f + 0.5) for t, f in df.items()}
    mean = sum(raw.values()) / len(raw)
    idf = {t: (epsilon * mean if v < 0 else v) for t, v in raw.items()}
    kept = sorted(weights, key=lambda t: -idf.get(t, 0.0) * weights[t])[:max_terms]
    avgdl = sum(len(d) for d in docs) / n
    ctx = []
    for d in docs:
        s = 0.0
        for t in kept:
            tf = d.count(t)
            s += weights[t] * idf.get(t, 0.0) * tf * (k1 + 1) / (
                tf + k1 * (1 - b + b * len(d) / avgdl))
        ctx.append(s)
    holds_own = [any(t in d for t in query) for d in docs]
    holds_ctx = [any(t in d for t in kept) for d in docs]
    top = max((own[i] for i in range(n) if holds_own[i]), default=1.0)
    best = max((ctx[i] for i in range(n) if holds_ctx[i]), default=0.0)
    if best <= 0 or top <= 0:
        return {i: own[i] for i in range(n) if holds_own[i]}
    scale = max(weights.values()) * top / best
    return {i: own[i] + ctx[i] * scale for i in range(n) if holds_own[i] or holds_ctx[i]}


def reply_vote(retriever: Retriever, viewer: Viewer, asked: str, in_view: Sequence[str],
               reply: str, wide: int, reply_terms: int, reply_share: float,
               vote: float) -> tuple[tuple[str, float], ...]:
    """``focus.reply_vote`` written out: each memory's text analysed again for the reply's
    terms, and the store-wide ``term_search`` read whole (no postings budget)."""
    terms = set(retriever.query_terms(reply)) if reply else set()
    if not terms:
        return ()
    both = ((asked, 1.0), (reply, 2.0))
    need = max(1, min(reply_terms, math.ceil(reply_share * len(terms))))

    def best(ids: Sequence[str]) -> str | None:
        memories = [m for m in retriever.live_memories(ids, viewer) if m is not None]
        drawn = [m.id for m in memories
                 if len(terms & set(retriever.query_terms(m.content))) >= need]
        if not drawn:
            return None
        scores = retriever.term_scores([m.id for m in memories], both)
        by_id = dict(zip((m.id for m in memories), scores.tolist(), strict=True))
        return max(drawn, key=lambda m: by_id[m])  # the first of the best, as argmax

    found = best(in_view) or best(retriever.term_search(both, wide, viewer))
    return () if found is None else ((found, vote),)
