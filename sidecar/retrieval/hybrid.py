"""The hybrid engine: vector + BM25 + graph candidates, fused by weighted RRF.

Serves ``Search`` and ``Inject`` (the ``Retriever`` contract) and listens to the write path
(``MemoryListener``) so every index follows commits at once: a forgotten or replaced memory
disappears from all sources before the write call returns.

Pipeline of one query (each stage timed in ``SearchResult.timings_us``):

1. ``embed``   the query (skipped when the caller passes its embedding);
2. ``vector``  top ``search_limit`` accepted labels by cosine (``VectorIndex``);
3. ``lexical`` top ``search_limit`` accepted labels by BM25 (``BM25Index``), on a pool thread
               during 1 (or beside 2 for a long query; see ``_sources``);
4. ``graph``   seeds = candidates of 2-3 with importance >= ``graph_seed_threshold`` (best rank
               first, at most ``graph_seed_limit``), expanded along edges (``EdgeGraph``);
5. ``fusion``  weighted RRF + importance/recency boost (``kernels.rrf``), top ``limit``;
6. ``cosine``  the exact query cosine of every returned hit (thresholdable by callers).

Modes: VECTOR and LEXICAL run only their source (fusion then only adds the boost); HYBRID
runs all three.

Config: a fixed ``RetrievalConfig`` or a callable returning the current one (the App passes the
config file's live ``[retrieval]``). Each search reads it once, so fusion, boost, graph and
``vector`` hot knobs apply from the next search; BM25 parameters are fixed at construction.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kernels.rrf import fuse
from sidecar.embedding import Embedder
from sidecar.records import Edge, Memory
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Accept, Hit, Mode, SearchQuery, SearchResult
from sidecar.retrieval.graph.expansion import EdgeGraph
from sidecar.retrieval.lexical.bm25 import BM25Index
from sidecar.retrieval.mirror import LiveMemories
from sidecar.retrieval.vector.contract import VectorIndex
from sidecar.retrieval.vector.exact import DenseVectors
from sidecar.store.edges import EdgeRepo
from sidecar.store.memories import MemoryRepo

log = logging.getLogger(__name__)

_NONE = (np.zeros(0, np.int64), np.zeros(0, np.float64))
ConfigSource = RetrievalConfig | Callable[[], RetrievalConfig]
US_PER_S = 1_000_000


class HybridRetriever:
    def __init__(
        self, embedder: Embedder, config: ConfigSource | None = None,
        vectors: VectorIndex | None = None, *, retune_vectors: bool = True,
    ) -> None:
        """``retune_vectors``: pass a new config's ``vector`` hot knobs to ``vectors.retune``
        (False: the vector index keeps the settings it was opened with)."""
        self.embedder = embedder
        self._retune_vectors = retune_vectors
        fixed = config if isinstance(config, RetrievalConfig) else RetrievalConfig()
        self._source: Callable[[], RetrievalConfig] = (
            config if callable(config) else lambda: fixed)
        c = self._source()
        self.live = LiveMemories()
        self.vectors: VectorIndex = vectors if vectors is not None else DenseVectors()
        self.lexical = BM25Index(c.bm25_k1, c.bm25_b, c.bm25_epsilon)
        self.graph = EdgeGraph()
        self._applied = c
        self._pool = ThreadPoolExecutor(1, "retrieval")

    @property
    def config(self) -> RetrievalConfig:
        """The config in force now; a new one is applied to the indexes on first sight."""
        c = self._source()
        if c is not self._applied:
            retune = getattr(self.vectors, "retune", None) if self._retune_vectors else None
            if retune is not None:
                retune(c.vector)
            self._applied = c
        return c

    def load(self, memories: MemoryRepo, edges: EdgeRepo, *, vectors_loaded: bool = False) -> None:
        """Fill every index from the store (at start). ``vectors_loaded``: the vector index was
        opened from the store already (``open_vector_index``); only the others are filled."""
        start = time.perf_counter()
        for batch, vectors in memories.iter_live_embeddings():
            labels = np.array([m.seq for m in batch], np.int64)
            self.live.put(batch)
            if not vectors_loaded:
                self.vectors.add(labels, vectors)
            self.lexical.add(labels.tolist(), [m.content for m in batch], bulk=True)
        self.lexical.merge()  # one CSR build; documents are searchable from here
        self.graph.changed(edges.all(), ())
        log.info("retrieval indexes loaded", extra={
            "memories": len(self.live), "edges": len(self.graph),
            "elapsed_ms": round((time.perf_counter() - start) * 1000, 1)})

    def close(self) -> None:
        self._pool.shutdown(wait=False)

    # --- MemoryListener -------------------------------------------------------------------

    def memories_stored(self, memories: Sequence[Memory], embeddings: np.ndarray) -> None:
        if not memories:
            return
        labels = np.array([m.seq for m in memories], np.int64)
        self.live.put(memories)
        self.vectors.add(labels, embeddings)
        self.lexical.add(labels.tolist(), [m.content for m in memories])

    def memories_forgotten(self, memories: Sequence[Memory]) -> None:
        gone = np.array(self.live.drop(memories), np.int64)
        if len(gone):
            self.lexical.remove(gone.tolist())
            self.vectors.remove(gone)

    def edges_changed(self, added: Sequence[Edge], removed: Sequence[Edge]) -> None:
        self.graph.changed(added, removed)

    # --- Retriever ------------------------------------------------------------------------

    def embed_query(self, text: str) -> np.ndarray:
        """A query's embedding as ``search`` computes it (``query_max_tokens``)."""
        return self.embedder.embed_query(text, self.config.query_max_tokens)

    def embedding_of(self, memory_id: str) -> np.ndarray | None:
        seq = self.live.seq_of(memory_id)
        return None if seq is None else self.vectors.vector(seq)

    def search(self, query: SearchQuery) -> SearchResult:
        clock = _Clock()
        c = self.config  # one snapshot for the whole query
        accept = self.live.accept(query.agent_id, query.types)
        k = query.search_limit
        vector, vec, lex = self._sources(c, query, accept, k, clock)
        graph = _NONE
        if query.mode is Mode.HYBRID:
            graph = self._expand(c, vec[0], lex[0], k, query)
        clock.lap("graph")
        labels, scores, ranks = self._fuse(c, (vec[0], lex[0], graph[0]), query.limit)
        clock.lap("fusion")
        cosines = self.vectors.cosine(vector, labels)
        clock.lap("cosine")
        hits = []
        for i, label in enumerate(labels.tolist()):
            memory = self.live.get(label)
            if memory is None or not _in_scope(memory, query):  # forgotten/changed meanwhile
                continue
            hits.append(Hit(memory, float(scores[i]), float(cosines[i]),
                            int(ranks[i, 0]), int(ranks[i, 1]), int(ranks[i, 2])))
        clock.lap("hits")
        timings = clock.done()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("search", extra={"mode": query.mode.value, "hits": len(hits),
                                       **{f"{k}_us": v for k, v in timings.items()}})
        return SearchResult(hits=hits, query_embedding=vector, timings_us=timings)

    def _sources(
        self, c: RetrievalConfig, query: SearchQuery, accept: Accept | None, k: int,
        clock: _Clock,
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The query embedding and the vector and lexical candidates.

        BM25 needs only the text, so it runs on the pool thread while this one embeds the query
        (the model and the BM25 kernel both release the GIL): the lexical search costs no wall
        time next to a 5-30 ms embedding. Not when the embedding itself runs on every core
        (a long text, ``Embedder.is_parallel``): its threads spin-wait on each other, and a
        third thread on 2 cores stalls them for longer than BM25 takes. Then, and with a
        precomputed embedding, BM25 overlaps the vector search from ``parallel_min_memories``
        live memories on (below, the hand-off costs more than it saves).
        """
        want_vec = query.mode in (Mode.HYBRID, Mode.VECTOR)
        want_lex = query.mode in (Mode.HYBRID, Mode.LEXICAL)
        vector = query.embedding
        with_embed = (want_lex and vector is None
                      and not self.embedder.is_parallel(query.text, c.query_max_tokens))
        with_vector = (want_lex and not with_embed and want_vec
                       and len(self.live) >= c.parallel_min_memories)
        if with_embed:
            future = self._pool.submit(_timed, self.lexical.search, query.text, k, accept)
        if vector is None:
            vector = self.embedder.embed_query(query.text, c.query_max_tokens)
        clock.lap("embed")
        if with_vector:  # the shorter search goes to the pool thread: its hand-off is hidden
            vec_future = self._pool.submit(_timed, self.vectors.search, vector, k, accept)
            lex = self.lexical.search(query.text, k, accept)
            lex_us = clock.since_lap()
            vec, vec_us = vec_future.result()
            clock.lap("sources")
            clock.record("vector", vec_us)
            clock.record("lexical", lex_us)
            return vector, _recheck(vec, accept), lex
        vec = _recheck(self.vectors.search(vector, k, accept), accept) if want_vec else _NONE
        clock.lap("vector")
        if with_embed and future.cancel():  # the pool was busy with another search's BM25
            with_embed = False
        if with_embed:
            lex, lex_us = future.result()
            clock.lap("lexical_wait")  # what the lexical search added after the others
            clock.record("lexical", lex_us)
        else:
            lex = self.lexical.search(query.text, k, accept) if want_lex else _NONE
            clock.lap("lexical")
        return vector, vec, lex

    def _expand(
        self, c: RetrievalConfig, vec: np.ndarray, lex: np.ndarray, k: int, query: SearchQuery
    ) -> tuple[np.ndarray, np.ndarray]:
        if c.graph_seed_limit == 0 or c.max_graph_depth == 0 or not len(self.graph):
            return _NONE
        best: dict[int, int] = {}
        for source in (vec, lex):
            for rank, label in enumerate(source.tolist()):
                if label not in best or rank < best[label]:
                    best[label] = rank
        seeds = [s for s in sorted(best, key=lambda s: (best[s], s))
                 if self.live.importance[s] >= c.graph_seed_threshold][: c.graph_seed_limit]
        if not seeds:
            return _NONE
        accept = self.live.filter(query.agent_id, query.types)
        return self.graph.expand(seeds, self.live, accept, c.multipliers,
                                 c.max_graph_depth, k)

    def _fuse(
        self, c: RetrievalConfig, lists: tuple[np.ndarray, np.ndarray, np.ndarray], limit: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        labels = np.unique(np.concatenate(lists))
        ranks = np.zeros((len(labels), 3), np.int32)
        for source, found in enumerate(lists):
            if len(found):
                ranks[np.searchsorted(labels, found), source] = np.arange(1, len(found) + 1)
        live = self.live
        age_s = (time.time_ns() // 1000 - live.updated_at[labels]) / US_PER_S
        scores, order = fuse(
            ranks, np.array([c.vector_weight, c.lexical_weight, c.graph_weight]), c.rrf_k,
            live.importance[labels], age_s, c.alpha, c.beta,
            c.recency_half_life_days * 86400.0, labels,
        )
        top = order[:limit]
        return labels[top], scores[top], ranks[top]


def _recheck(
    found: tuple[np.ndarray, np.ndarray], accept: Accept | None
) -> tuple[np.ndarray, np.ndarray]:
    """Apply the filter again to an index's answer (k labels: cheap). Scope is a privacy rule;
    it must not depend on every index backend honouring ``accept`` under concurrent writes."""
    if accept is None or not len(found[0]):
        return found
    keep = accept(found[0])
    return found[0][keep], found[1][keep]


def _in_scope(memory: Memory, query: SearchQuery) -> bool:
    """The last word on scope, on the record actually returned: the filters above read the
    mirror columns earlier, and an upsert may since have changed the memory's agent or type
    (or, with no private memory in the store then, the query ran unfiltered)."""
    return memory.visible_to(query.agent_id) and (not query.types or memory.type in query.types)


def _timed(
    func: object, *args: object
) -> tuple[tuple[np.ndarray, np.ndarray], int]:
    start = time.perf_counter_ns()
    out = func(*args)  # type: ignore[operator]
    return out, (time.perf_counter_ns() - start) // 1000


class _Clock:
    """Per-stage wall time in microseconds."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter_ns()
        self.timings: dict[str, int] = {}

    def since_lap(self) -> int:
        return (time.perf_counter_ns() - self.last) // 1000

    def lap(self, name: str) -> None:
        now = time.perf_counter_ns()
        self.timings[name] = (now - self.last) // 1000
        self.last = now

    def record(self, name: str, us: int) -> None:
        self.timings[name] = us

    def done(self) -> dict[str, int]:
        self.timings["total"] = (time.perf_counter_ns() - self.start) // 1000
        return self.timings
