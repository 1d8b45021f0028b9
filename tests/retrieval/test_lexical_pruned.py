"""The pruned top-k BM25 (``lexical.pruned``, ``kernels.maxscore``) against scoring every
posting: the same labels, the same float scores, the same order, ties included."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from kernels.maxscore import _plan, _scan
from sidecar.records import Memory, MemoryType, Viewer
from sidecar.retrieval.lexical import pruned
from sidecar.retrieval.lexical.bm25 import BM25Index, accepted, top_k
from sidecar.retrieval.mirror import LiveMemories

Accept = Callable[[np.ndarray], np.ndarray]
KS = [1, 2, 3, 7, 20, 64, 100_000]
FILTERS: dict[str, Accept | None] = {
    "none": None,
    "all": lambda labels: np.ones(len(labels), bool),
    "two thirds": lambda labels: labels % 3 != 0,
    "one in 13": lambda labels: labels % 13 == 5,
    "nothing": lambda labels: np.zeros(len(labels), bool),
}


def words(rng: np.random.Generator, vocab: int, n: int) -> list[str]:
    """``n`` words of a Zipfian vocabulary: a few common words, a long tail of rare ones."""
    ranks = np.minimum(rng.zipf(1.3, n), vocab)
    return [f"w{r}x" for r in ranks.tolist()]


def zipf_texts(rng: np.random.Generator, n: int, vocab: int) -> list[str]:
    texts = [" ".join(words(rng, vocab, int(rng.integers(1, 40)))) for _ in range(n)]
    for i in rng.choice(n, n // 10, replace=False).tolist():  # copies: equal scores, ties
        texts[i] = texts[int(rng.integers(0, n))]
    return texts


def built(seed: int, n: int = 600, vocab: int = 400, batches: int = 6,
          groups: bool = False) -> tuple[BM25Index, np.random.Generator]:
    """An index over ``n`` Zipfian texts added in batches (several segments), some removed
    and some replaced (dead postings)."""
    rng = np.random.default_rng(seed)
    index = BM25Index(min_main_merge=10_000, background_merge=False)
    texts = zipf_texts(rng, n, vocab)
    labels = list(range(1, n + 1))
    for part in np.array_split(np.arange(n), batches):
        chosen = [labels[i] for i in part.tolist()]
        index.add(chosen, [texts[i] for i in part.tolist()],
                  groups=[label % 2 for label in chosen] if groups else None)
    gone = rng.choice(labels, n // 8, replace=False).tolist()
    index.remove(gone[: len(gone) // 2])
    again = gone[len(gone) // 2:]
    index.add(again, zipf_texts(rng, len(again), vocab),
              groups=[label % 2 for label in again] if groups else None)
    return index, rng


def queries(rng: np.random.Generator, count: int, vocab: int = 400) -> list[str]:
    out = [" ".join(words(rng, vocab, int(rng.integers(1, 9)))) for _ in range(count)]
    return [*out, "w1x w1x w2x", "w399x w1x", "nowhere w3x", "nowhere"]


def same(got: tuple[np.ndarray, np.ndarray], want: tuple[np.ndarray, np.ndarray]) -> None:
    assert got[0].tolist() == want[0].tolist()
    assert got[1].tolist() == want[1].tolist()  # the same floats, not close ones


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", list(FILTERS))
def test_search_equals_every_posting_scored(seed: int, name: str) -> None:
    """Unfiltered, the pruned path; filtered, every posting scored (``lexical.pruned``):
    either way the reference's answer."""
    index, rng = built(seed)
    assert index.segment_count > 1
    accept = FILTERS[name]
    for text in queries(rng, 40):
        for k in KS:
            want = top_k(*accepted(index.scores(text), accept), k)
            same(index.search(text, k, accept), want)


@pytest.mark.parametrize("seed", [21, 22])
def test_pruning_is_exact_at_any_k(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``MAX_K`` pruning costs more than it saves but stays exact: k up to more than
    the documents that match, on several segments with removed documents."""
    monkeypatch.setattr(pruned, "MAX_K", 10**9)
    index, rng = built(seed)
    for text in queries(rng, 30):
        for k in KS:
            same(index.search(text, k), top_k(*index.scores(text), k))


def scoped(rng: np.random.Generator, n: int) -> LiveMemories:
    """A mirror of memories 1..n: shared, agents', users' and channels' private ones, of
    every type, some dropped."""
    kinds = list(MemoryType)
    memories = []
    for seq in range(1, n + 1):
        agent = str(rng.choice(["", "a", "b"]))
        user = str(rng.choice(["", "", "u1", "u2"])) if agent else ""
        memories.append(Memory(
            id=f"m{seq}", content="", type=kinds[int(rng.integers(len(kinds)))], importance=0.5,
            created_at=0, updated_at=0, last_accessed_at=0, access_count=0, source="",
            channel_id=str(rng.choice(["c1", "c2"])), agent_id=agent, forgotten=False,
            version=1, seq=seq, user_id=user,
            channel_private=bool(agent and not user and rng.random() < 0.3)))
    live = LiveMemories(capacity=8)
    live.put(memories)
    live.drop(memories[::11])
    return live


@pytest.mark.parametrize("seed", [31, 32])
def test_search_with_visibility_columns_equals_the_filter_over_every_posting(
        seed: int) -> None:
    """The kernel applies the mirror's columns itself: for viewers of every kind and type
    filters, the answer of the filter function over every posting scored."""
    index, rng = built(seed)
    live = scoped(rng, 600)
    kinds = list(MemoryType)
    viewers = [(Viewer(agent, user, channel, shared), tuple(kinds[:n]))
               for agent in ("", "a") for user in ("", "u1") for channel in ("", "c1")
               for shared in (False, True) for n in (0, 1, 3)]
    for text in queries(rng, 12):
        every = index.scores(text)
        for viewer, types in viewers:
            accept = live.filter(viewer, types)
            columns = live.visibility(viewer, types)
            for k in (1, 4, 20, 32):
                want = top_k(*accepted(every, accept), k)
                same(index.search(text, k, accept, visibility=columns), want)
    query = index._query(index.analyzer.query_terms("w1x w2x w5x w40x"))
    assert query is not None
    snap, ids, idf = query
    segments = [(s.arrays, s.bounds()) for s in snap.segments]
    viewer, types = viewers[5]
    found = pruned.search_pruned(segments, snap.doc_len, snap.alive, snap.doc_label,
                                 snap.n_docs, ids, idf, index.k1, index.b, snap.avgdl, 10,
                                 live.filter(viewer, types), index._buffers(snap.n_docs),
                                 live.visibility(viewer, types))
    assert found is not None  # pruned, not the fallback
    same(found, top_k(*accepted(index.scores("w1x w2x w5x w40x"), live.filter(viewer, types)),
                      10))


@pytest.mark.parametrize("seed", [12, 13])
def test_a_filter_rejecting_the_best_documents(seed: int) -> None:
    """The documents that would hold the top places are rejected: the k-th place goes to
    documents further down, which the scan must reach (or ask the filter about)."""
    index, rng = built(seed)
    for text in queries(rng, 30):
        labels, scores = index.scores(text)
        if not len(labels):
            continue
        for worst in (1, 5, 30):
            cut = top_k(labels, scores, worst)[0]

            def accept(found: np.ndarray, cut: np.ndarray = cut) -> np.ndarray:
                return ~np.isin(found, cut)

            for k in (1, 5, 20, 1000):
                same(index.search(text, k, accept), top_k(*accepted((labels, scores), accept), k))


@pytest.mark.parametrize("max_terms", [1, 3])
def test_search_of_the_rarest_terms_equals_every_posting_scored(max_terms: int) -> None:
    index, rng = built(4)
    for text in queries(rng, 30):
        for k in (1, 10, 1000):
            same(index.search(text, k, FILTERS["two thirds"], max_terms),
                 top_k(*accepted(index.scores(text, max_terms), FILTERS["two thirds"]), k))


def test_search_with_group_statistics_equals_every_posting_scored() -> None:
    index, rng = built(5, groups=True)
    for text in queries(rng, 30):
        for k in (1, 5, 50):
            for groups in ({0}, {1}, {0, 1}):
                same(index.search(text, k, None, groups=groups),
                     top_k(*index.scores(text, groups=groups), k))


@pytest.mark.parametrize("name", ["none", "two thirds", "one in 13"])
def test_weighted_search_equals_every_posting_scored(name: str) -> None:
    index, rng = built(6)
    accept = FILTERS[name]
    for _ in range(30):
        weights = {w: float(rng.uniform(0.05, 2.0)) for w in words(rng, 400, 6)}
        for k in (1, 4, 20, 5000):
            every = index._collect(index._accumulate(extra=weights))
            same(index.search_weighted(weights, k, accept), top_k(*accepted(every, accept), k))


def test_one_segment_and_many_ties() -> None:
    """Every text one of a few: whole groups of documents tie at the k-th score."""
    rng = np.random.default_rng(8)
    index = BM25Index(background_merge=False)
    kinds = zipf_texts(rng, 12, 60)
    index.add(list(range(1, 2001)), [kinds[i % len(kinds)] for i in range(2000)])
    index.merge()
    assert index.segment_count == 1
    for text in queries(rng, 20, 60):
        for k in (1, 5, 150, 167, 168, 3000):
            same(index.search(text, k), top_k(*index.scores(text), k))
            same(index.search(text, k, FILTERS["two thirds"]),
                 top_k(*accepted(index.scores(text), FILTERS["two thirds"]), k))


def test_the_pruned_path_runs_and_skips_postings() -> None:
    """Not a fallback: ``search_pruned`` answers; and for a query of a rare term and common
    ones the scan stops before the last term (whose postings are then read only for the
    candidates), which the answer being exact would not show."""
    rng = np.random.default_rng(9)
    index = BM25Index(background_merge=False)
    index.add(list(range(1, 3001)), zipf_texts(rng, 3000, 400))
    index.merge()
    text = "w1x w2x w3x w300x"
    query = index._query(index.analyzer.query_terms(text))
    assert query is not None
    snap, ids, idf = query
    seg = snap.segments[0]
    found = pruned.search_pruned([(seg.arrays, seg.bounds())], snap.doc_len, snap.alive,
                                 snap.doc_label, snap.n_docs, ids, idf, index.k1, index.b,
                                 snap.avgdl, 5, None, index._buffers(snap.n_docs))
    assert found is not None
    same(found, top_k(*index.scores(text), 5))
    k1, b = index.k1, index.b
    base, per_len = k1 * (1 - b), k1 * b / snap.avgdl
    upper, order, rest = np.empty(4), np.empty(4, np.int64), np.empty(5)
    m = _plan(*seg.arrays, seg.bounds(), snap.doc_len, ids, idf, k1, base, per_len, upper,
              order, rest)
    partial, seen, touched = index._buffers(snap.n_docs)
    j, count, theta = _scan(*seg.arrays, snap.doc_len, snap.alive, ids, idf, k1, base, per_len,
                            order, rest, m, partial, seen, touched, np.empty(5), 0, np.empty(5),
                            snap.doc_label, None)
    partial[touched[:count]] = 0.0
    seen[touched[:count]] = 0
    assert m == 4 and j < 4 and theta > rest[j]  # stopped before the last term
    assert count < len(index.scores(text)[0])  # touched fewer documents than hold a term


def test_bounds_cover_every_contribution() -> None:
    """The per-term bound of ``kernels.maxscore`` is >= each posting's contribution, and
    the occurrences are listed by bound descending."""
    index, rng = built(10, batches=1)
    seg = index._segments[0]
    snap = index._view(index._stats_locked(None))
    k1, b = index.k1, index.b
    base, per_len = k1 * (1 - b), k1 * b / snap.avgdl
    terms = np.arange(len(seg.term_ptr) - 1, dtype=np.int64)
    idf = rng.uniform(0.1, 5.0, len(terms))
    upper, order, rest = np.empty(len(terms)), np.empty(len(terms), np.int64), np.empty(
        len(terms) + 1)
    m = _plan(*seg.arrays, seg.bounds(), snap.doc_len, terms, idf, k1, base, per_len, upper,
              order, rest)
    assert m == int((np.diff(seg.term_ptr) > 0).sum())
    for t in terms.tolist():
        lo, hi = seg.term_ptr[t], seg.term_ptr[t + 1]
        tf = seg.post_tf[lo:hi].astype(np.float64)
        dl = snap.doc_len[seg.post_doc[lo:hi]]
        contribution = idf[t] * (k1 + 1) * tf / (tf + (base + per_len * dl))
        assert (contribution <= upper[t]).all()
    assert (np.diff(upper[order[:m]]) <= 0).all()
    assert np.allclose(rest[:m], np.cumsum(upper[order[:m]][::-1])[::-1], rtol=1e-6)


@pytest.mark.parametrize("k", [1, 3, 50])
def test_idf_at_or_below_zero_falls_back_to_every_posting(k: int) -> None:
    """A term in most documents of a small store can score below 0 (the idf floor of a
    vocabulary of common terms): not pruned, and the same answer."""
    index = BM25Index(background_merge=False)
    index.add(list(range(1, 9)), ["alpha beta", "alpha beta", "alpha gamma", "alpha beta",
                                  "beta alpha", "alpha", "beta", "alpha beta gamma"])
    query = index._query(index.analyzer.query_terms("alpha beta"))
    assert query is not None
    snap, ids, idf = query
    assert (idf <= 0).any()
    segments = [(s.arrays, s.bounds()) for s in snap.segments]
    assert pruned.search_pruned(segments, snap.doc_len, snap.alive, snap.doc_label,
                                snap.n_docs, ids, idf, index.k1, index.b, snap.avgdl, k, None,
                                index._buffers(snap.n_docs)) is None
    same(index.search("alpha beta", k), top_k(*index.scores("alpha beta"), k))
