"""The vector index the engine uses: exact below a size threshold, hnswlib above it.

``AdaptiveVectorIndex`` implements the ``VectorIndex`` protocol. It always keeps the exact
dense matrix (``DenseVectors``: exact cosine of any label, ``vector(label)``, the reference
search) and, once the live count reaches ``exact_threshold``, an hnswlib index used for
``search``. Search is correct at every moment:

- below the threshold, while the hnsw index is being built (in a background thread, with
  writes journalled and replayed before it goes live), while a write holds the hnsw index,
  and when a filter rejects so much that hnsw would have to scan a large part of the index,
  the exact path answers;
- otherwise hnswlib answers (its recall floor against exact search is tested in
  tests/retrieval/test_vector_recall.py; measured figures in docs/decisions/0006).

Persistence (``persist``): ``save()`` writes ``DATA_DIR/vectors.hnsw`` + meta. It runs
after a (re)build, in the background once ``save_every_changes`` rows changed and at least
``save_min_interval_s`` passed since the last save (so a big import is saved soon after it
ends), and in ``close()`` when anything changed. ``start()`` loads the saved index when it
matches SQLite exactly, otherwise logs why and rebuilds in the background.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np

from sidecar.disk import os_refusal
from sidecar.knobs import check_ranges, keep_restart_keys
from sidecar.retrieval.contract import Accept
from sidecar.retrieval.vector import hnsw_file, persist
from sidecar.retrieval.vector.bulk import BulkDenseVectors
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.retrieval.vector.hnsw import HnswVectors
from sidecar.store.memories import MemoryRepo

__all__ = ["AdaptiveVectorIndex", "build_hnsw", "create_vector_index", "open_vector_index"]

log = logging.getLogger(__name__)

_BUILD_CHUNK = 4096
_FILTER_SAMPLE = 256
# Journal replay: rounds outside the write lock until at most this many entries remain.
_HAND_OVER_TAIL = 32
_CATCH_UP_ROUNDS = 8


class AdaptiveVectorIndex:
    """Exact search below ``exact_threshold`` live vectors, hnswlib above; see module doc."""

    def __init__(
        self, dim: int, config: VectorConfig | None = None, path: Path | None = None
    ) -> None:
        self.dim = dim
        self.config = config or VectorConfig()
        check_ranges(self.config, "retrieval.vector")
        self.path = path if self.config.persist else None
        self._dense = BulkDenseVectors(dim)
        self._rng = np.random.default_rng(0)  # filter-rate samples
        self._hnsw: HnswVectors | None = None
        self._write = threading.Lock()  # every add/remove, build hand-over, save copy
        self._threads = threading.Lock()  # starting/joining the builder and saver
        self._journal: list[tuple[np.ndarray, np.ndarray | None]] | None = None
        self._builder: threading.Thread | None = None
        self._saver: threading.Thread | None = None
        self._stop = threading.Event()
        self._started = False
        self._build_failed = False
        self._unsaved = 0
        self._last_save = time.monotonic()
        # Erased labels: hnswlib keeps a deleted element's vector, so every save zeroes
        # theirs in the file it writes (a label added again leaves the set).
        self._erased: set[int] = set()
        self._file = threading.Lock()  # the index file: a save, or an erasure zeroing in it

    def __len__(self) -> int:
        return len(self._dense)

    # --- writes ----------------------------------------------------------------------------

    def reserve(self, rows: int) -> None:
        """Pre-size the dense matrix before a bulk load of ``rows`` rows."""
        with self._write:
            self._dense.reserve(rows + rows // 8)

    def reserve_labels(self, labels: int) -> None:
        """Room in the label index for labels below ``labels``."""
        self._dense.reserve_labels(labels)

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        """Insert or replace (upsert) rows; vectors are L2-normalised float32."""
        labels = np.asarray(labels, dtype=np.int64).ravel()
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(labels), self.dim)
        with self._write:
            self._erased.difference_update(labels.tolist())
            self._dense.add(labels, vectors)
            if self._hnsw is not None:
                self._hnsw.add(labels, vectors)
            elif self._journal is not None:
                self._journal.append((labels.copy(), vectors.copy()))
            self._changed(len(labels))
        self._maybe_save()

    def replace_all(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        """New vectors for many rows at once (another embedding model). The dense rows change
        now; an hnsw index in use is dropped and rebuilt in the background, exact search
        answering meanwhile: updating its graph in place would take minutes at 100k rows."""
        labels = np.asarray(labels, dtype=np.int64).ravel()
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(labels), self.dim)
        with self._write:
            self._dense.add(labels, vectors)
            self._unsaved += len(labels)
            if self._journal is not None:  # a build is running: it replays these rows
                self._journal.append((labels.copy(), vectors.copy()))
            elif self._hnsw is not None:
                self._hnsw = None
                self._start_build("vectors replaced by another model")
            else:
                self._changed(0)

    def remove(self, labels: np.ndarray) -> None:
        labels = np.asarray(labels, dtype=np.int64).ravel()
        with self._write:
            self._dense.remove(labels)
            if self._hnsw is not None:
                self._hnsw.remove(labels)
            elif self._journal is not None:
                self._journal.append((labels.copy(), None))
            self._changed(len(labels))
        self._maybe_save()

    def rewrite_without(self, labels: Sequence[int]) -> None:
        """``labels`` were erased (already removed): the saved index file, which holds their
        vectors, is deleted at once (a save in progress finishes first); every later save
        (the usual cadence, or ``close``) zeroes their vectors in the file it writes. Not
        saved here: hnswlib holds the GIL while it writes the file (0.8 s at 100k vectors),
        which would stall every call. Until the next save a restart rebuilds the index, as
        after any change not saved yet."""
        with self._write:
            self._erased.update(int(label) for label in labels)
        if self.path is None:
            return
        with self._file:
            for path in (self.path, persist.meta_path(self.path)):
                path.unlink(missing_ok=True)

    def _changed(self, rows: int) -> None:
        self._unsaved += rows
        if self._started and self._hnsw is None and self._builder is None:
            if len(self._dense) >= self.config.exact_threshold and not self._build_failed:
                self._start_build("live count reached exact_threshold")

    # --- reads -----------------------------------------------------------------------------

    def search(
        self, query: np.ndarray, k: int, accept: Accept | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k accepted labels by cosine, descending: (labels int64, scores float32)."""
        hnsw = self._hnsw
        live = len(self._dense)
        if hnsw is None or live < self.config.exact_threshold or k <= 0:
            return self._dense.search(query, k, accept)
        plan = self._plan(min(k, live), accept, live)
        if plan is not None:
            first, budget = plan
            found = hnsw.query(query, k, accept, first=first, max_candidates=budget,
                               blocking=False)
            if found is not None:
                return found
        return self._dense.search(query, k, accept)

    def search_within(
        self, query: np.ndarray, k: int, labels: np.ndarray, accept: Accept | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k among ``labels`` (the dense matrix, never hnsw)."""
        return self._dense.search_within(query, k, labels, accept)

    def _plan(self, k: int, accept: Accept | None, live: int) -> tuple[int, int] | None:
        """(first candidate count, candidate budget) for hnsw, or None to search exactly.

        The accepted fraction is estimated on a sample of live labels; hnsw is worth it
        while the candidates needed stay within ``filter_exact_fraction`` of the index.
        """
        if accept is None:
            return k, live
        budget = max(2 * k + 64, int(self.config.filter_exact_fraction * live))
        sample = self._dense.sample_labels(_FILTER_SAMPLE, self._rng)
        rate = float(np.mean(accept(sample))) if len(sample) else 1.0
        if rate <= 0.0:
            return None
        need = math.ceil(1.5 * k / rate)
        return None if need > budget else (need, budget)

    def cosine(self, query: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Exact cosine of the query with each label (nan for unknown labels)."""
        return self._dense.cosine(query, labels)

    def rows_of(self, labels: np.ndarray) -> np.ndarray:
        return self._dense.rows_of(labels)

    def vector(self, label: int) -> np.ndarray | None:
        return self._dense.vector(label)

    def locked_rows(self) -> AbstractContextManager[tuple[np.ndarray, np.ndarray]]:
        return self._dense.locked_rows()

    def scan(self, query: np.ndarray, accept: Accept) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosine with every live accepted row (always the dense matrix, never hnsw)."""
        return self._dense.scan(query, accept)

    def rows(self, accept: Accept) -> tuple[np.ndarray, np.ndarray]:
        return self._dense.rows(accept)

    def stats(self) -> dict[str, int | str | bool]:
        live = len(self._dense)
        engine = "hnsw" if self._hnsw is not None and live >= self.config.exact_threshold else (
            "exact")
        return {"live": live, "engine": engine, "building": self.building,
                "unsaved": self._unsaved}

    @property
    def building(self) -> bool:
        builder = self._builder
        return builder is not None and builder.is_alive()

    @property
    def hnsw(self) -> HnswVectors | None:
        """The approximate index once built (None before); e.g. for ``set_ef``."""
        return self._hnsw

    # --- life cycle ------------------------------------------------------------------------

    def start(self, wait: bool = False) -> None:
        """Rows are loaded: use the saved hnsw index if it matches, else (re)build it."""
        self._started = True
        live = len(self._dense)
        if live < self.config.exact_threshold:
            log.info("vector index: exact search", extra={
                "live": live, "exact_threshold": self.config.exact_threshold})
            return
        reason = "persistence off"
        if self.path is None:
            log.info("vector index build", extra={"reason": reason, "live": live})
        else:
            reason = self._load_saved()
            if not reason:
                return
            log.warning("vector index rebuild", extra={"reason": reason, "live": live,
                                                       "path": str(self.path)})
        with self._write:
            self._start_build(reason)
        if wait:
            self.wait_ready()

    def _load_saved(self) -> str:
        assert self.path is not None
        begin = time.perf_counter()
        cfg = self.config
        with self._write:  # the rows checked are the rows indexed (no copy needed)
            labels, matrix = self._dense.live_rows()
            loaded = persist.load(
                self.path, labels, matrix, dim=self.dim, m=cfg.hnsw_m,
                ef_construction=cfg.hnsw_ef_construction, ef_search=cfg.hnsw_ef_search,
            )
            if loaded.index is None:
                return loaded.reason
            self._hnsw = loaded.index
            self._unsaved = 0
        log.info("vector index loaded", extra={
            "live": len(labels), "path": str(self.path),
            "elapsed_ms": round((time.perf_counter() - begin) * 1000, 1)})
        return ""

    def retune(self, config: VectorConfig) -> None:
        """Take the hot knobs of ``config`` (search beam, filter fraction, save cadence, build
        threads) at once; the restart-only ones keep their running value: they shape the index
        already built or its file."""
        cfg = keep_restart_keys(self.config, config)
        if cfg == self.config:
            return
        check_ranges(cfg, "retrieval.vector")
        self.config = cfg
        hnsw = self._hnsw
        if hnsw is not None and hnsw.ef_search != cfg.hnsw_ef_search:
            hnsw.set_ef(cfg.hnsw_ef_search)
        log.info("vector index retuned", extra={"ef_search": cfg.hnsw_ef_search})

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for a running build; True when the hnsw index is in use."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
        return self._hnsw is not None

    def close(self) -> None:
        """Stop background work and save if anything changed since the last save."""
        self._stop.set()
        with self._threads:
            threads = [t for t in (self._builder, self._saver) if t is not None]
        for thread in threads:
            thread.join()
        if self._hnsw is not None and self._unsaved:
            self._save_quietly()

    def save(self) -> bool:
        """Write the hnsw index and its meta. False when there is nothing to save."""
        path, cfg = self.path, self.config
        if path is None:
            return False
        begin = time.perf_counter()
        with self._file:
            with self._write:
                hnsw = self._hnsw
                if hnsw is None:
                    return False
                tmp = persist.write_file(hnsw, path)
                labels, matrix = self._dense.copy_rows()
                erased = set(self._erased)
                self._unsaved = 0
                self._last_save = time.monotonic()
            try:
                hnsw_file.scrub(tmp, erased, self.dim)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            meta = persist.commit(
                tmp, path, labels, matrix, dim=self.dim, m=cfg.hnsw_m,
                ef_construction=cfg.hnsw_ef_construction,
            )
        log.info("vector index saved", extra={
            "live": meta.count, "bytes": meta.file_bytes, "path": str(path),
            "elapsed_ms": round((time.perf_counter() - begin) * 1000, 1)})
        return True

    def _maybe_save(self) -> None:
        cfg = self.config
        if self.path is None or self._hnsw is None or self._unsaved < cfg.save_every_changes:
            return
        if time.monotonic() - self._last_save < cfg.save_min_interval_s:
            return
        with self._threads:
            if self._stop.is_set() or (self._saver is not None and self._saver.is_alive()):
                return
            self._saver = threading.Thread(target=self._save_quietly, name="vector-save",
                                           daemon=True)
            self._saver.start()

    def _save_quietly(self) -> None:
        try:
            self.save()
        except OSError as err:
            if os_refusal(err) is None:
                log.exception("vector index save failed", extra={"path": str(self.path)})
            else:  # a full or read-only disk: the next start rebuilds the index
                log.warning("vector index not saved: the disk refuses writes",
                            extra={"path": str(self.path), "error": err.strerror})

    # --- background build ------------------------------------------------------------------

    def _start_build(self, reason: str) -> None:
        """Called with ``_write`` held: copy the rows, journal writes from now on."""
        labels, matrix = self._dense.copy_rows()
        self._journal = []
        with self._threads:
            self._builder = threading.Thread(
                target=self._build, args=(labels, matrix, reason), name="vector-build",
                daemon=True)
            self._builder.start()

    def _build(self, labels: np.ndarray, matrix: np.ndarray, reason: str) -> None:
        begin = time.perf_counter()
        try:
            hnsw = build_hnsw(labels, matrix, self.config, self.dim, self._stop)
            if hnsw is None:
                self._journal = None
                log.info("vector index build stopped", extra={"live": len(labels)})
                return
            self._catch_up(hnsw)
            with self._write:
                _replay(hnsw, self._journal or [])
                self._journal = None
                if hnsw.ef_search != self.config.hnsw_ef_search:  # retuned during the build
                    hnsw.set_ef(self.config.hnsw_ef_search)
                self._hnsw = hnsw
        except Exception:
            self._build_failed = True
            self._journal = None
            log.exception("vector index build failed; exact search stays in use")
            return
        log.info("vector index built", extra={
            "live": len(hnsw), "reason": reason, "threads": self.config.build_threads(),
            "elapsed_s": round(time.perf_counter() - begin, 2)})
        if not self._stop.is_set():
            self._save_quietly()


    def _catch_up(self, hnsw: HnswVectors) -> None:
        """Replay the journal into the (still private) new index without the write lock,
        round after round while writers keep journalling, so that the hand-over replays only
        a short tail with writes blocked (a long build under a stream of writes would
        otherwise stall every write for the whole replay)."""
        for _ in range(_CATCH_UP_ROUNDS):
            with self._write:
                pending = self._journal or []
                if len(pending) <= _HAND_OVER_TAIL:
                    return
                self._journal = []
            _replay(hnsw, pending)


def _replay(hnsw: HnswVectors, journal: list[tuple[np.ndarray, np.ndarray | None]]) -> None:
    for rows, vectors in journal:
        if vectors is None:
            hnsw.remove(rows)
        else:
            hnsw.add(rows, vectors)


def build_hnsw(
    labels: np.ndarray, matrix: np.ndarray, config: VectorConfig, dim: int,
    stop: threading.Event | None = None,
) -> HnswVectors | None:
    """A fresh hnsw index over (labels, matrix), in chunks; None if ``stop`` was set."""
    hnsw = HnswVectors(
        dim, m=config.hnsw_m, ef_construction=config.hnsw_ef_construction,
        ef_search=config.hnsw_ef_search, capacity=max(1024, len(labels) + len(labels) // 4),
    )
    threads = config.build_threads()
    for start in range(0, len(labels), _BUILD_CHUNK):
        if stop is not None and stop.is_set():
            return None
        end = start + _BUILD_CHUNK
        hnsw.add(labels[start:end], matrix[start:end], threads=threads)
    return hnsw


def create_vector_index(
    data_dir: Path | str, config: VectorConfig, dim: int
) -> AdaptiveVectorIndex:
    """An empty index saved under ``data_dir``: fill it (``reserve``, ``add``), then ``start``."""
    return AdaptiveVectorIndex(dim, config, Path(data_dir) / persist.INDEX_FILE)


def open_vector_index(
    data_dir: Path | str, repo: MemoryRepo, config: VectorConfig, dim: int,
    wait: bool = False,
) -> AdaptiveVectorIndex:
    """Load every live embedding from SQLite, then the saved hnsw index or a rebuild."""
    begin = time.perf_counter()
    index = create_vector_index(data_dir, config, dim)
    index.reserve(repo.count())
    for seqs, vectors in repo.iter_live_vectors():
        index.add(seqs, vectors)
    index.start(wait=wait)
    log.info("vector index opened", extra={
        **index.stats(), "elapsed_ms": round((time.perf_counter() - begin) * 1000, 1)})
    return index
