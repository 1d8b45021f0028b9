"""The hybrid engine: a list of sources (vector, BM25, graph), fused into one ranking.

Serves ``Search`` and ``Inject`` (the ``Retriever`` contract) and listens to the write path
(``MemoryListener``) so every index follows commits at once: a forgotten or replaced memory
disappears from all sources before the write call returns.

Pipeline of one query (each stage timed in ``SearchResult.timings_us``, names in ``stages``):

1. ``embed``   the query (skipped when the caller passes its embedding);
2. ``vector``  top ``search_limit`` accepted labels by cosine (``VectorSource``);
3. ``lexical`` top ``search_limit`` accepted labels by BM25 (``LexicalSource``), on a pool thread
               during 1 (or beside 2 for a long query; see ``_first_stage``);
4. then each later source in order (``graph``: expansion from the candidates of 2-3), seeing
   the labels found before it;
5. ``fusion``  ``[retrieval] fusion``: normalised score fusion (``fusion.scores``, over the
               exact query cosine of every candidate, BM25 and graph scores; one kernel call,
               ``pooled``) or weighted RRF (``fusion.rrf``), plus the importance/recency
               boost, top ``limit``;
6. ``cosine``  (RRF) the exact query cosine of every returned hit. Either way it is
               ``Hit.cosine``, thresholdable by callers;
7. ``hits``    the hits, hydrated from the mirror.

Modes: VECTOR and LEXICAL run only their source (fusion then only adds the boost); HYBRID
runs all. A new source is a ``Source`` (``fusion.contract``) added to ``later_sources`` with a
``<name>_weight`` (RRF) and a share (score fusion) knob in ``RetrievalConfig``.

Config: a ``Live[RetrievalConfig]`` (the App passes the config file's live ``[retrieval]``).
Each search reads it once, so fusion, boost, graph and ``vector`` hot knobs apply from the next
search; BM25 parameters are fixed at construction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Container, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np

from sidecar.embedding import Embedder
from sidecar.live import Live
from sidecar.records import Edge, Memory, MemoryType, Relation, Viewer
from sidecar.retrieval.background import SimilarityBackground, uniform
from sidecar.retrieval.changes import Changes
from sidecar.retrieval.config import RRF, SCOPES, STORE, RetrievalConfig
from sidecar.retrieval.contract import (
    Accept,
    Ahead,
    Hit,
    Place,
    QueryEmbedding,
    SearchQuery,
    SearchResult,
    SourceRank,
    Weighted,
    cosine_of,
    steered,
)
from sidecar.retrieval.fusion.contract import (
    Found,
    Source,
    SourceContext,
    fusion_weight,
    nothing,
)
from sidecar.retrieval.fusion.pool import Fused, Ranked
from sidecar.retrieval.fusion.rrf import fuse_ranked
from sidecar.retrieval.graph.expansion import EdgeGraph
from sidecar.retrieval.graph.source import GraphSource
from sidecar.retrieval.lexical import held
from sidecar.retrieval.lexical import persist as lexical_persist
from sidecar.retrieval.lexical.bm25 import BM25Index, distinct_terms, term_weights
from sidecar.retrieval.lexical.source import LexicalSource
from sidecar.retrieval.lexical.tokenize import Analyzer
from sidecar.retrieval.mirror import LiveMemories
from sidecar.retrieval.pooled import fuse_with_cosines
from sidecar.retrieval.resident import writes
from sidecar.retrieval.resident.keys import SHARED, ScopeKey, scope_of, viewer_scopes
from sidecar.retrieval.resident.loader import ScopeIndexes, ScopeLoader
from sidecar.retrieval.resident.lru import ResidentScopes
from sidecar.retrieval.resident.members import ScopeMembers
from sidecar.retrieval.resident.prefetch import Prefetch
from sidecar.retrieval.scopes import ScopeScan
from sidecar.retrieval.stages import (
    COSINE,
    EMBED,
    FUSION,
    HITS,
    LEXICAL,
    LEXICAL_WAIT,
    SOURCES,
    VECTOR,
)
from sidecar.retrieval.vector.contract import VectorIndex
from sidecar.retrieval.vector.exact import DenseVectors
from sidecar.retrieval.vector.rwlock import RWLock
from sidecar.retrieval.vector.source import VectorSource
from sidecar.retrieval.writers import WriterSequences, writer_of
from sidecar.store.edges import EdgeRepo
from sidecar.store.memories import MemoryRepo
from sidecar.timing import Clock, timed

log = logging.getLogger(__name__)

# A search scores only its viewer's scopes' rows when they are at most this share of the
# index (1/N): gathering a row costs a few times scanning one (docs/decisions/0033).
WITHIN_SHARE = 4


class HybridRetriever:
    def __init__(
        self, embedder: Embedder, config: Live[RetrievalConfig] | None = None,
        vectors: VectorIndex | None = None, lexical_path: Path | None = None,
    ) -> None:
        """``vectors``: the index to search (exact ``DenseVectors`` by default); one with a
        ``retune`` method takes each new config's ``vector`` hot knobs. ``lexical_path``:
        where the BM25 postings are saved (``lexical.persist``); None: not saved."""
        self.embedder = embedder
        self._config = config or Live.fixed(RetrievalConfig())
        c = self._config.get()
        self.live = LiveMemories()
        self.vectors: VectorIndex = vectors if vectors is not None else DenseVectors(embedder.dim)
        self.lexical = BM25Index(c.bm25_k1, c.bm25_b, c.bm25_epsilon,
                                 analyzer=Analyzer(c.bm25_stemming))
        self.lexical_path = lexical_path
        self._lexical_saved = -1  # the BM25 version on disk
        self._lexical_file = threading.Lock()  # the postings file: a save, or an erasure
        self.graph = EdgeGraph(self.live)
        # Scopes held in the indexes, loaded on first use (``load`` turns it on).
        self.scope_rows = ScopeMembers(self.vectors.dim)
        # Every change to what a search reads (``changes``).
        self._changes = Changes()
        self.loader = ScopeLoader(ScopeIndexes(
            self._put, self._drop, lambda edges: self.edges_changed(edges, ()),
            self._held_in, self.lexical.analyzer.terms, self.lexical.compact))
        self.resident = ResidentScopes(self.loader.read, self.loader.evict,
                                       self.scope_rows.bytes_of,
                                       lambda: int(self.config.resident_mb * 2**20),
                                       lambda: self.pinned, self.scope_rows.all_bytes)
        self.pinned: tuple[ScopeKey, ...] = (SHARED, *((a, "") for a in c.resident_agents))
        self._prefetch = Prefetch(self.resident)  # cold scopes loaded ahead of their calls
        self.writers = WriterSequences()  # what each writer wrote, in order (``Place``)
        self.scopes = ScopeScan(self.vectors, self.live, self.resident)  # the vault's scans
        self.background = SimilarityBackground(self._background_sample)
        self._vector_source = VectorSource(self.vectors)
        # ``_within``'s share (1/N); 0: every row scored, the reference it is tested against.
        self.within_share = WITHIN_SHARE
        self._lexical_source = LexicalSource(self.lexical, self.groups)
        # Sources run after the first stage (vector + lexical), in order: add new ones here.
        self.later_sources: tuple[Source, ...] = (GraphSource(self.graph),)
        self._applied = c
        self._pool = ThreadPoolExecutor(1, "retrieval")
        self._switch = RWLock()  # searches read; a model switch writes
        self.clock: Callable[[], Clock] = Clock  # times the stages (benches: a CPU clock)

    def switch_model(self, target: Embedder, memories: MemoryRepo) -> None:
        """Replace every live vector with its stored one (re-embedded by ``target``) and embed
        queries with ``target`` from then on; no search runs in between. Call with writes
        paused, after the store's vectors were swapped."""
        with self._switch.write(), self._changes.changing():
            labels, rows = [], []
            for batch, vectors in memories.iter_live_embeddings():
                held = [i for i, m in enumerate(batch) if self.live.get(m.seq) is not None]
                labels.append(np.array([batch[i].seq for i in held], np.int64))
                rows.append(vectors[held])
            if labels:
                replace_all = getattr(self.vectors, "replace_all", self.vectors.add)
                replace_all(np.concatenate(labels), np.vstack(rows))
                self.background.changed(sum(len(batch) for batch in labels))
            self.embedder.adopt(target)

    @property
    def sources(self) -> tuple[Source, ...]:
        """Every source, in fusion (and ``Hit.ranks``) order."""
        return (self._vector_source, self._lexical_source, *self.later_sources)

    @property
    def config(self) -> RetrievalConfig:
        """The config in force now; a new one is applied to the indexes on first sight."""
        c = self._config.get()
        if c is not self._applied:
            retune = getattr(self.vectors, "retune", None)
            if retune is not None:
                retune(c.vector)
            self._applied = c
        return c

    def load(self, memories: MemoryRepo, edges: EdgeRepo) -> None:
        """Fill the indexes at start: with every memory, or with scopes on demand
        (``residency``) with the pinned scopes (the others are read from ``memories`` on
        first use): one read of the live memories with their embeddings.
        BM25 takes its saved postings when they match the rows read (``lexical_path``),
        else tokenises them. An index with a ``start`` method is started afterwards (a
        store held whole: by scope the vectors are searched exactly)."""
        with self._changes.changing():
            self._load(memories, edges)

    def _load(self, memories: MemoryRepo, edges: EdgeRepo) -> None:
        begin = time.perf_counter()
        whole = self._holds_whole_store(memories)
        if not whole:  # hygiene reads every user of an agent: from the store
            self.scopes.agent_rows = lambda agent: memories.agent_rows(agent, self.embedder.dim)
            self._reserve_for_scopes(memories)
        if whole:
            reserve = getattr(self.vectors, "reserve", None)
            if reserve is not None:
                reserve(memories.count())
        labels: list[int] = []
        texts: list[str] = []
        groups: list[int] = []
        batches = (memories.iter_live_embeddings() if whole else
                   (found for key in self.pinned for found in memories.iter_scope(*key)))
        for batch, vectors in batches:
            batch_labels = np.array([m.seq for m in batch], np.int64)
            self.live.put(batch)
            self.scope_rows.put(batch)
            self.writers.add(batch)
            self._add_vectors(batch_labels, vectors)
            labels += batch_labels.tolist()
            texts += [m.content for m in batch]
            groups += [self.resident.code(scope_of(m)) for m in batch]
        if labels:
            self.scopes.heard(max(labels))
        self._load_lexical(labels, texts, groups)
        self.loader.attach(memories, edges)
        if not whole:
            self.resident.adopt(self.pinned)  # from here on, scopes on demand
        # Scopes on demand: the edges of the held memories (a scope's come with its load).
        self.graph.changed(edges.all() if whole else edges.committed_touching(
            [m.id for m in map(self.live.get, labels) if m is not None]), ())
        # Scopes on demand: exact vectors only. A search reads its viewer's few scopes out
        # of every held one, a filter the vector index answers exactly anyway (hnsw would
        # scan most of its graph), so an hnsw index of the held memories would only cost
        # memory, each load's inserts and its saves.
        start = getattr(self.vectors, "start", None)
        if start is not None and whole:
            start()
        log.info("retrieval indexes loaded", extra={
            "memories": len(self.live), "edges": len(self.graph),
            "elapsed_ms": round((time.perf_counter() - begin) * 1000, 1)})

    def _reserve_for_scopes(self, memories: MemoryRepo) -> None:
        """Scopes on demand: the columns indexed by seq (the mirror's, the vectors' label
        index, the graph's nodes) sized for every stored seq, and the vector matrix for the
        rows the budget holds, allocated now (zeroed pages, taken as they are written)
        rather than grown, a copy of every row each time, inside the calls whose loads
        cross each size."""
        labels = memories.max_seq() + 1
        self.live.reserve(labels)
        self.graph.reserve(labels)
        room = getattr(self.vectors, "reserve_labels", None)
        if room is not None:
            room(labels)
        reserve = getattr(self.vectors, "reserve", None)
        if reserve is not None:
            per_row = self.scope_rows.estimate(1, memories.mean_chars())
            reserve(min(memories.count(), int(self.config.resident_mb * 2**20) // per_row))

    def _holds_whole_store(self, memories: MemoryRepo) -> bool:
        """``residency``: "store", "scopes", or by whether the store fits ``resident_mb``."""
        c = self.config
        if c.residency in (STORE, SCOPES):
            return c.residency == STORE
        size = self.scope_rows.estimate(memories.count(), memories.mean_chars())
        return size <= int(c.resident_mb * 2**20)

    def _load_lexical(self, labels: list[int], texts: list[str], groups: list[int]) -> None:
        checksum = _checksum(labels, texts) if self.lexical_path else ""
        if self.lexical_path is not None:
            postings, reason = lexical_persist.load(self.lexical_path, checksum,
                                                     self.lexical.analyzer.name)
            if postings is not None:
                self.lexical.restore(postings, np.array(
                    [self._group_of(label) for label in postings.labels.tolist()], np.int32))
                self._lexical_saved = self.lexical.version
                return
            log.info("bm25 postings rebuilt", extra={"reason": reason})
        for start in range(0, len(labels), 4096):
            end = start + 4096
            self.lexical.add(labels[start:end], texts[start:end], bulk=True,
                             groups=groups[start:end])
        self.lexical.merge()  # one CSR build; documents are searchable from here
        if self.lexical_path is not None:
            try:
                self._save_lexical(checksum)
            except OSError as exc:  # a full or read-only disk: tokenised again next start
                log.warning("bm25 postings not saved", extra={"error": str(exc)})

    def _save_lexical(self, checksum: str = "") -> bool:
        """Save the BM25 postings (of the pinned scopes with scopes on demand), which the
        next start loads
        (``checksum``: of their live rows, computed here if empty); False when the mirror and
        BM25 disagreed (a write in flight): not saved."""
        assert self.lexical_path is not None
        with self._lexical_file:
            version = self.lexical.version
            postings = self.lexical.export({self.resident.code(key) for key in self.pinned}
                                           if self.resident.on_demand else None)
            if not checksum:
                texts = [m.content for m in map(self.live.get, postings.labels.tolist())
                         if m is not None]
                if len(texts) != len(postings.labels):
                    return False
                checksum = _checksum(postings.labels.tolist(), texts)
            lexical_persist.save(self.lexical_path, postings, checksum)
            self._lexical_saved = version
            return True

    def rewrite_without(self, labels: Sequence[int]) -> None:
        """``labels`` were erased (the listeners removed them): the saved BM25 postings and
        vector index, which hold their terms and vectors, are deleted at once (a save in
        progress finishes first). The postings are saved again at close, as after any write
        (``export`` leaves the erased terms out); the vector index at its next save."""
        if self.lexical_path is not None:
            with self._lexical_file:
                for path in (self.lexical_path, lexical_persist.meta_path(self.lexical_path)):
                    path.unlink(missing_ok=True)
                self._lexical_saved = -1
        rewrite = getattr(self.vectors, "rewrite_without", None)
        if rewrite is not None:
            rewrite(labels)

    def close(self) -> None:
        self._prefetch.close()
        self._pool.shutdown(wait=False)
        if self.lexical_path is not None and self.lexical.version != self._lexical_saved:
            try:
                self._save_lexical()
            except OSError as exc:  # the next start tokenises afresh
                log.warning("bm25 postings not saved", extra={"error": str(exc)})

    # --- MemoryListener -------------------------------------------------------------------

    def memories_stored(self, memories: Sequence[Memory], embeddings: np.ndarray) -> None:
        """Into the indexes as far as their scopes are held (``resident.writes``)."""
        if not memories:
            return
        with self.resident.reading():
            writes.stored(self.resident, self.loader.indexes, memories, embeddings)
            self.scopes.heard(max(m.seq for m in memories))

    def memories_forgotten(self, memories: Sequence[Memory]) -> None:
        with self.resident.reading():
            writes.forgotten(self.resident, self.loader.indexes, memories)

    def _put(self, key: ScopeKey, memories: Sequence[Memory], embeddings: np.ndarray,
             terms: Sequence[list[str]] | None = None) -> None:
        """``terms``: the memories' BM25 terms when already analysed (a scope's load)."""
        with self._changes.changing():
            self._put_now(key, memories, embeddings, terms)

    def _put_now(self, key: ScopeKey, memories: Sequence[Memory], embeddings: np.ndarray,
                 terms: Sequence[list[str]] | None) -> None:
        labels = np.array([m.seq for m in memories], np.int64)
        self.live.put(memories)
        self.writers.add(memories)
        self.scope_rows.put(memories)
        self.graph.memories_stored(memories)
        self._add_vectors(labels, embeddings)
        self.lexical.add(labels.tolist(), [m.content for m in memories],
                         groups=[self.resident.code(key)] * len(memories), terms=terms)

    def _drop(self, memories: Sequence[Memory]) -> None:
        with self._changes.changing():
            self._drop_now(memories)

    def _drop_now(self, memories: Sequence[Memory]) -> None:
        gone = np.array(self.live.drop(memories), np.int64)
        self.writers.forgot(len(gone), lambda seq: self.live.get(seq) is not None)
        self.graph.memories_forgotten(memories)
        if len(gone):
            self.scope_rows.drop(gone.tolist())
            self.lexical.remove(gone.tolist())
            self._remove_vectors(gone)

    def _held_in(self, key: ScopeKey) -> list[Memory]:
        return [m for m in map(self.live.get, self.scope_rows.seqs(key)) if m is not None]

    def groups(self, viewer: Viewer) -> Collection[int] | None:
        """The BM25 groups a search for ``viewer`` scores with: its scopes (None before the
        indexes were loaded from a store: every document's statistics)."""
        if not self.resident.on_demand:
            return None
        return {self.resident.code(key) for key in viewer_scopes(viewer)}

    def _group_of(self, label: int) -> int:
        memory = self.live.get(label)
        return self.resident.code(scope_of(memory) if memory is not None else SHARED)

    def _add_vectors(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        self.vectors.add(labels, vectors)
        self.background.changed(len(labels))

    def _remove_vectors(self, labels: np.ndarray) -> None:
        self.vectors.remove(labels)
        self.background.changed(len(labels))

    def _background_sample(self, n: int) -> tuple[np.ndarray, int]:
        """A uniform sample of at most ``n`` live vectors, and the number of live vectors."""
        labels = np.flatnonzero(self.live.alive).astype(np.int64)
        rows = self.vectors.rows_of(uniform(labels, n))
        return rows[~np.isnan(rows[:, 0])], len(labels)

    def edges_changed(self, added: Sequence[Edge], removed: Sequence[Edge]) -> None:
        with self._changes.changing():
            self.graph.changed(added, removed)

    def changes(self) -> tuple[int, RetrievalConfig] | None:
        """The count of changes to the indexes (``Changes.token``) with the config in force;
        None while a change is under way."""
        token = self._changes.token()
        return None if token is None else (token, self.config)

    # --- Retriever ------------------------------------------------------------------------

    def embed_query(self, text: str) -> np.ndarray:
        """A query's embedding as ``search`` computes it (``query_max_tokens``)."""
        return self.embedder.embed_query(text, self.config.query_max_tokens)

    def query_terms(self, text: str) -> tuple[str, ...]:
        return distinct_terms(self.lexical.analyzer, text)

    def embedding_of(self, memory_id: str) -> np.ndarray | None:
        seq = self.live.seq_of(memory_id)
        return None if seq is None else self.vectors.vector(seq)

    def live_memories(self, memory_ids: Sequence[str], viewer: Viewer) -> list[Memory | None]:
        with self.resident.using(viewer_scopes(viewer)):
            return self._live_memories(memory_ids, viewer)

    def _live_memories(self, memory_ids: Sequence[str], viewer: Viewer) -> list[Memory | None]:
        live = self.live
        out: list[Memory | None] = []
        for memory_id in memory_ids:
            seq = live.seq_of(memory_id)
            memory = None if seq is None else live.get(seq)
            out.append(memory if memory is not None and memory.offered_to(viewer) else None)
        return out

    def places(self, memory_ids: Sequence[str], viewer: Viewer) -> list[Place | None]:
        return [None if m is None else Place(writer_of(m),
                                             self.writers.position(writer_of(m), m.seq))
                for m in self.live_memories(memory_ids, viewer)]

    def neighbourhood(self, memory_ids: Sequence[str], radius: int,
                      viewer: Viewer) -> list[Memory]:
        with self.resident.using(viewer_scopes(viewer)):
            return self._neighbourhood(memory_ids, radius, viewer)

    def _neighbourhood(self, memory_ids: Sequence[str], radius: int,
                       viewer: Viewer) -> list[Memory]:
        live = self.live
        seqs: set[int] = set()
        for m in self._live_memories(memory_ids, viewer):
            if m is None:
                continue
            writer = writer_of(m)

            def written(seq: int, writer: tuple[str, str, str, str] = writer) -> bool:
                found = live.get(seq)
                return (found is not None and writer_of(found) == writer
                        and found.offered_to(viewer))

            seqs.update(self.writers.near(writer, m.seq, radius, written))
        near = [m for m in map(live.get, sorted(seqs)) if m is not None]
        return near

    def embeddings_at(self, seqs: np.ndarray) -> np.ndarray:
        return self.vectors.rows_of(seqs)

    def term_scores(self, memory_ids: Sequence[str], texts: Weighted) -> np.ndarray:
        """With scopes loaded on demand: over the statistics of the memories' scopes and
        the shared one (the scopes of the viewer they were found for, as far as they go)."""
        labels = self.labels_of(memory_ids)
        return self.lexical.score_documents(labels, term_weights(self.lexical.analyzer, texts),
                                            self._groups_of(labels))

    def _groups_of(self, labels: Sequence[int]) -> Collection[int] | None:
        """The BM25 groups ``term_scores`` of ``labels`` reads (None: every document's)."""
        if not self.resident.on_demand:
            return None
        return {*self.lexical.groups_of(labels), self.resident.code(SHARED)}

    def term_search(self, texts: Weighted, k: int, viewer: Viewer) -> list[str]:
        with self.resident.using(viewer_scopes(viewer)):
            labels, _ = self.lexical.search_weighted(
                term_weights(self.lexical.analyzer, texts), k, self.live.accept(viewer),
                self.groups(viewer))
            found = map(self.live.get, labels.tolist())
            return [m.id for m in found if m is not None and m.offered_to(viewer)]

    def term_search_within(self, texts: Weighted, k: int, viewer: Viewer,
                           postings: int) -> list[str]:
        with self.resident.using(viewer_scopes(viewer)):
            labels, _ = held.rare_search(self.lexical, term_weights(self.lexical.analyzer, texts),
                                         k, postings, self.live.accept(viewer),
                                         self.groups(viewer))
            found = map(self.live.get, labels.tolist())
            return [m.id for m in found if m is not None and m.offered_to(viewer)]

    def held_scores(self, memory_ids: Sequence[str], terms: Collection[str],
                    texts: Weighted) -> tuple[np.ndarray, np.ndarray]:
        labels = self.labels_of(memory_ids)
        return held.held_scores(self.lexical, labels, terms,
                                term_weights(self.lexical.analyzer, texts),
                                self._groups_of(labels))

    def labels_of(self, memory_ids: Sequence[str]) -> list[int]:
        """Each live memory's label, -1 for one not live."""
        seqs = [self.live.seq_of(m) for m in memory_ids]
        return [-1 if s is None else s for s in seqs]

    def similarity_background(self, query: np.ndarray) -> tuple[float, float, int]:
        return self.background.of(query)

    def members(self, viewer: Viewer, memory_type: MemoryType) -> list[tuple[Memory, bool]]:
        with self.resident.using(viewer_scopes(viewer)):
            return self.live.members(self.live.filter(viewer, (memory_type,)))

    def established(self, memory_ids: Sequence[str]) -> None:
        self.live.mark_established(memory_ids)

    def pointing_to(self, memory_ids: Sequence[str],
                    relations: Container[Relation]) -> list[tuple[Memory, str]]:
        live = self.live
        found = []
        for source_id, target_id in self.graph.sources_into(memory_ids, relations):
            seq = live.seq_of(source_id)
            source = None if seq is None else live.get(seq)
            if source is not None:
                found.append((source, target_id))
        return found

    def prefetch(self, viewer: Viewer) -> int:
        """Start loading ``viewer``'s cold scopes beside what its call does before it
        searches (``resident.prefetch``); returns at once: how many."""
        return self._prefetch.start(viewer_scopes(viewer))

    def search(self, query: SearchQuery) -> SearchResult:
        # Query and memory vectors of one model; the viewer's scopes held throughout.
        with self._switch.read():
            keys = viewer_scopes(query.viewer)
            embed_us = 0
            if query.embedding is None and self._prefetch.start(keys):
                # Cold scopes: they load on the loader threads while this one embeds.
                vector, embed_us = timed(self.embed_query, query.text)
                query = replace(query, embedding=vector)
            with self.resident.using(keys):
                result = self._search(query)
            if embed_us:
                result.timings_us[EMBED] = embed_us
            return result

    def query_embedding(self, text: str) -> QueryEmbedding:
        """Tokenised now (``alone`` needs the length); the model runs in ``run()``."""
        embedder = self.embedder
        tokens = embedder.tokenize_query(text, self.config.query_max_tokens)
        return QueryEmbedding(partial(embedder.embed_tokens, tokens), embedder.is_long(tokens),
                              embedder)

    def ahead(self, query: SearchQuery) -> Ahead:
        """The config, the scope filter and the lexical list (BM25 needs only the text)."""
        with self._switch.read(), self.resident.using(viewer_scopes(query.viewer)):
            c = self.config
            accept = self.live.accept(query.viewer, query.types)
            lexical, lexical_us = (
                timed(self._lexical_source.search, SourceContext(c, query, self.live, accept))
                if query.mode.uses(LEXICAL) else (nothing(), 0))
            return Ahead(query, _Ahead(c, accept, lexical, lexical_us))

    def finish(self, ahead: Ahead, embedding: np.ndarray,
               model: object | None = None) -> SearchResult:
        """``model``: the one ``embedding`` came from; another than the engine's now (a model
        switch since) has the text embedded again."""
        engine = ahead.engine
        assert isinstance(engine, _Ahead)
        with self._switch.read(), self.resident.using(viewer_scopes(ahead.query.viewer)):
            if model is not None and model is not self.embedder:
                embedding = self.embed_query(ahead.query.text)
            return self._search(replace(ahead.query, embedding=embedding), engine)

    def _search(self, query: SearchQuery, ahead: _Ahead | None = None) -> SearchResult:
        clock = self.clock()
        within = self._within(query.viewer)
        if ahead is None:
            c = self.config  # one config for the whole query
            ctx = SourceContext(c, query, self.live, self.live.accept(query.viewer, query.types),
                                within=within)
            ctx, found, text = self._first_stage(ctx, clock)
        else:
            c = ahead.config
            ctx, found, text = self._with_lexical(
                SourceContext(c, query, self.live, ahead.accept, within=within), clock, ahead)
        for source in self.later_sources:
            labels = {name: f.labels for name, f in found.items()}
            found[source.name] = (source.search(SourceContext(
                c, query, ctx.live, ctx.accept, ctx.embedding, labels))
                if query.mode.uses(source.name) else nothing())
            clock.lap(source.name)
        lists = [Ranked(s.name, fusion_weight(s, c), *found.get(s.name, nothing())[:2])
                 for s in self.sources]
        fused, rows, cosines = self._fuse(lists, ctx, clock)
        assert ctx.embedding is not None and text is not None
        hits = self._hits(fused, rows, cosines, query, c)
        clock.lap(HITS)
        timings = clock.done()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("search", extra={"mode": query.mode.value, "hits": len(hits),
                                       **{f"{k}_us": v for k, v in timings.items()}})
        return SearchResult(hits=hits, query_embedding=ctx.embedding, text_embedding=text,
                            timings_us=timings, lexical=found[LEXICAL].every)

    def _within(self, viewer: Viewer) -> np.ndarray | None:
        """The memories of ``viewer``'s scopes (they hold all it may be offered), when they
        are at most 1/``WITHIN_SHARE`` of the index: scoring their rows alone costs less than
        scanning every row (or than hnsw, which a filter this selective sends to the scan)."""
        keys = viewer_scopes(viewer)
        share = self.within_share
        if not share or self.scope_rows.total(keys) * share > len(self.live):
            return None
        return self.scope_rows.labels(keys)

    def _fuse(
        self, lists: list[Ranked], ctx: SourceContext, clock: Clock
    ) -> tuple[Fused, np.ndarray, np.ndarray]:
        """The top ``limit`` fused candidates, their rows and their query cosines. Score
        fusion weighs every candidate by its cosine: one kernel computes them for the
        whole pool (a few dozen rows) and fuses (``pooled``); RRF only for the winners."""
        c, query, embedding = ctx.config, ctx.query, ctx.embedding
        assert embedding is not None
        if c.fusion == RRF:
            fused = fuse_ranked(lists, self.live, c, query.limit)
            clock.lap(FUSION)
            rows = self.vectors.rows_of(fused.labels)
            cosines = rows @ embedding
            clock.lap(COSINE)
            return fused, rows, cosines
        fused, rows, cosines = fuse_with_cosines(lists, self.vectors, embedding, self.live, c,
                                                 query.limit, query.mode.uses(VECTOR))
        clock.lap(FUSION)
        return fused, rows, cosines

    def _hits(
        self, fused: Fused, rows: np.ndarray, cosines: np.ndarray, query: SearchQuery,
        c: RetrievalConfig,
    ) -> list[Hit]:
        sources = self.sources
        names = [s.name for s in sources]
        weights = [fusion_weight(s, c) for s in sources]
        get = self.live.get
        known = (rows[:, 0] == rows[:, 0]).tolist()  # nan: the row changed meanwhile
        viewer = query.viewer
        hits = []
        for i, label, ranks, score, cosine in zip(
                range(len(known)), fused.labels.tolist(), fused.ranks.tolist(),
                fused.scores.tolist(), cosines.tolist(), strict=True):
            memory = get(label)
            if memory is None or not _in_scope(memory, viewer, query.types):  # changed meanwhile
                continue
            hits.append(Hit(memory, score, cosine_of(cosine),
                            tuple(map(SourceRank, names, ranks, weights)),
                            rows[i] if known[i] else None))
        return hits

    def _with_lexical(
        self, ctx: SourceContext, clock: Clock, ahead: _Ahead
    ) -> tuple[SourceContext, dict[str, Found], np.ndarray]:
        """``_first_stage`` of a query given its embedding and its lexical list (``ahead``)."""
        query = ctx.query
        assert query.embedding is not None
        text = query.embedding
        clock.lap(EMBED)
        ctx = replace(ctx, embedding=steered(text, query.context))
        vec = self._vector_source.search(ctx) if query.mode.uses(VECTOR) else nothing()
        clock.lap(VECTOR)
        clock.record(LEXICAL, ahead.lexical_us)
        return ctx, {VECTOR: vec, LEXICAL: ahead.lexical}, text

    def _first_stage(
        self, ctx: SourceContext, clock: Clock
    ) -> tuple[SourceContext, dict[str, Found], np.ndarray]:
        """The query embedding (in the returned context: steered by ``query.context``), the
        vector and lexical lists, and the text's own embedding.

        BM25 needs only the text, so it runs on the pool thread while this one embeds the query
        (the model and the BM25 kernel both release the GIL): the lexical search costs no wall
        time next to the embedding. Not when the embedding itself runs on every core
        (a long text, ``Embedder.is_long``): its threads spin-wait on each other, and a
        third thread on 2 cores stalls them for longer than BM25 takes. Then, and with a
        precomputed embedding, BM25 overlaps the vector search from ``parallel_min_memories``
        live memories on (below, the hand-off costs more than it saves).
        """
        query, c = ctx.query, ctx.config
        vec_source, lex_source = self._vector_source, self._lexical_source
        want_vec, want_lex = query.mode.uses(VECTOR), query.mode.uses(LEXICAL)
        vector = query.embedding
        # Tokenised once: for the decision below and for the model.
        tokens = (self.embedder.tokenize_query(query.text, c.query_max_tokens)
                  if vector is None else None)
        with_embed = want_lex and tokens is not None and not self.embedder.is_long(tokens)
        with_vector = (want_lex and not with_embed and want_vec
                       and len(self.live) >= c.parallel_min_memories)
        if with_embed:
            future = self._pool.submit(timed, lex_source.search, ctx)
        if tokens is not None:
            vector = self.embedder.embed_tokens(tokens)
        clock.lap(EMBED)
        assert vector is not None
        text = vector
        ctx = replace(ctx, embedding=steered(vector, query.context))
        if with_vector:  # the shorter search goes to the pool thread: its hand-off is hidden
            vec_future = self._pool.submit(timed, vec_source.search, ctx)
            lex = lex_source.search(ctx)
            lex_us = clock.since_lap()
            vec, vec_us = vec_future.result()
            clock.lap(SOURCES)
            clock.record(VECTOR, vec_us)
            clock.record(LEXICAL, lex_us)
            return ctx, {VECTOR: vec, LEXICAL: lex}, text
        vec = vec_source.search(ctx) if want_vec else nothing()
        clock.lap(VECTOR)
        if with_embed and future.cancel():  # the pool was busy with another search's BM25
            with_embed = False
        if with_embed:
            lex, lex_us = future.result()
            clock.lap(LEXICAL_WAIT)  # what the lexical search added after the others
            clock.record(LEXICAL, lex_us)
        else:
            lex = lex_source.search(ctx) if want_lex else nothing()
            clock.lap(LEXICAL)
        return ctx, {VECTOR: vec, LEXICAL: lex}, text


@dataclass(frozen=True, slots=True)
class _Ahead:
    """``Ahead.engine``: what a query's search read and found before its embedding."""

    config: RetrievalConfig
    accept: Accept | None
    lexical: Found
    lexical_us: int


def _checksum(labels: list[int], texts: list[str]) -> str:
    """Of the (label, text) pairs in label order, however they were loaded."""
    order = sorted(range(len(labels)), key=labels.__getitem__)
    return lexical_persist.content_checksum([labels[i] for i in order], [texts[i] for i in order])


def _in_scope(memory: Memory, viewer: Viewer, types: Sequence[MemoryType]) -> bool:
    """The last word on scope, on the record actually returned: the filters above read the
    mirror columns earlier, and an upsert may since have changed the memory's agent or type
    (or, with no private memory in the store then, the query ran unfiltered)."""
    return memory.offered_to(viewer) and (not types or memory.type in types)
