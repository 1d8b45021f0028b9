"""The composition root: every component is built here, in one place, and closed in reverse.

Servicers receive the components they serve from the App and own nothing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernels.warmup import warm_up_all
from sidecar import heap
from sidecar.api.server_config import ServerConfig
from sidecar.auth.tokens import TOKENS_FILENAME
from sidecar.capture import Capture, Drain
from sidecar.capture.repo import CaptureRepo
from sidecar.capture.retention import retention_once
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.disk import DiskFaults
from sidecar.embedding import Embedder
from sidecar.embedding.models import ModelIdentity, identity, model_files, serving_files
from sidecar.errors import StorageFault
from sidecar.files import private_dir, remove_stale_temps
from sidecar.injection.channels import ChannelStates
from sidecar.injection.elsewhere import ResetElsewhere, channel_digest
from sidecar.injection.marker import BlockSigner
from sidecar.injection.owners import ChannelOwners
from sidecar.injection.pipeline import Injector
from sidecar.injection.state_repo import StateRepo
from sidecar.injection.sweep import ChannelSweeper
from sidecar.injection.trace import TraceRing
from sidecar.live import Live
from sidecar.memory.erasure import Eraser
from sidecar.memory.reembed import ReEmbed
from sidecar.memory.scrub import DiskScrub
from sidecar.memory.service import MemoryService
from sidecar.metrics.registry import Metrics, Sources
from sidecar.retrieval.contract import Retriever
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.lexical import persist as lexical_persist
from sidecar.retrieval.lexical.persist import POSTINGS_FILE
from sidecar.retrieval.vector import persist as vector_persist
from sidecar.retrieval.vector.adaptive import AdaptiveVectorIndex, create_vector_index
from sidecar.store.backend import open_store
from sidecar.store.contract import SqlStore
from sidecar.store.db import Database
from sidecar.store.erasure import ErasureRepo
from sidecar.store.lock import DataDirLock
from sidecar.store.model_repo import MODEL_KEY
from sidecar.store.repos import Repositories
from sidecar.store.scope_keys import user_digest
from sidecar.store.write_behind import WriteBehind
from sidecar.vault import Vault
from sidecar.vault.screen import Screen

if TYPE_CHECKING:
    from sidecar.store.postgres.feed import ChangeFeed

log = logging.getLogger(__name__)


@dataclass
class App:
    config: ServerConfig
    db: SqlStore
    embedder: Embedder
    memories: MemoryService
    retriever: Retriever
    settings: ConfigStore  # the live config file (hot reload, Settings RPCs)
    vault: Vault
    injector: Injector
    owners: ChannelOwners
    sweeper: ChannelSweeper
    lock: DataDirLock
    metrics: Metrics
    eraser: Eraser
    vectors: AdaptiveVectorIndex | None = None
    reembed: ReEmbed | None = None  # a switch to the configured model, in progress
    feed: ChangeFeed | None = None  # PostgreSQL: other sidecars' writes, followed
    faults: DiskFaults = field(default_factory=DiskFaults)  # writes the disk refused

    @property
    def live(self) -> Live[Config]:
        """The running config; components take ``live.map(...)`` views of their section."""
        return self.settings.live()

    @classmethod
    def open(
        cls, config: ServerConfig, embedder: Embedder | None = None,
        settings: ConfigStore | None = None,
    ) -> App:
        start = time.perf_counter()
        private_dir(config.data_dir)  # 0700, files 0600
        lock = DataDirLock(config.data_dir)  # raises DataDirLocked when another server has it
        try:
            return cls._open(config, lock, start, embedder, settings)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _open(
        cls, config: ServerConfig, lock: DataDirLock, start: float,
        embedder: Embedder | None, settings: ConfigStore | None,
    ) -> App:
        if settings is None:  # no --config: DATA_DIR/memsidecar.toml if it exists, else defaults
            settings = ConfigStore.open(Path(config.data_dir) / CONFIG_FILENAME)
        settings.pin_server(config)
        _remove_stale_temps(Path(config.data_dir), settings.path)
        faults = settings.faults = DiskFaults()  # one record for the data dir's every file
        live = settings.live()
        db = open_store(settings.current.store, config.db_path, faults)
        private_dir(config.data_dir)  # the new database file: its WAL and shm take its mode
        signer = BlockSigner.open(Path(config.data_dir))  # the data dir's secret
        repos = Repositories.open(db, page_key=signer.derive("page-token"))
        wanted = settings.current.embedding.model
        stored = _stored_model(repos)
        if embedder is None:  # queries use the model of the stored vectors until a switch
            embedder = _serving_embedder(stored, wanted, config)
        target = identity(wanted, embedder.max_tokens)
        if stored != target and repos.memories.count() == 0:
            try:
                repos.models.swap(target.to_json())  # nothing to re-embed
            except StorageFault:
                pass  # the disk refuses writes (logged): the next start records the model
            if embedder.files.sha256 != target.sha256:
                embedder.adopt(_embedder(wanted, config))
            stored = target
        memories = MemoryService(repos, embedder, config.max_content_chars,
                                 config.embed_batch_size)
        # The hybrid engine keeps every index (vectors, BM25, graph, mirror) in step itself and
        # reads [retrieval] per search; the store keeps restart-only keys at their running value.
        vectors = create_vector_index(config.data_dir, settings.current.retrieval.vector,
                                      embedder.dim)
        retriever = HybridRetriever(embedder, live.map(lambda c: c.retrieval), vectors,
                                    Path(config.data_dir) / POSTINGS_FILE)
        eraser = Eraser(memories, ErasureRepo(db), DiskScrub(db, retriever))
        feed = _feed(db, memories, settings.current.store.feed_retention_days, retriever,
                     eraser.scrub)
        after = feed.watermark() if feed is not None else None  # the load covers to here
        retriever.load(memories.memories, memories.edges)  # fills and starts `vectors`
        memories.listeners.add(retriever)
        if feed is not None and after is not None:
            feed.start(after)
        # Installs the write gate on `memories` (exact scans of the engine's vectors per scope);
        # reads [vault] on every write.
        vault = Vault(memories, retriever.scopes, live.map(lambda c: c.vault), eraser.make_room)
        state_writes = WriteBehind(db, name="injection-state")
        capture_repo = CaptureRepo(db)
        drain = Drain(capture_repo, memories, embedder)
        screen = Screen(live.map(lambda c: c.vault))
        capture = Capture(capture_repo, drain, screen, signer.is_block)
        injector = Injector(
            embedder=embedder, retriever=retriever, memories=repos.memories,
            config=live,
            states=ChannelStates(StateRepo(db), repos.memories.get_many,
                                 state_writes, shared=db.dialect == "postgres"),
            signer=signer,
            snapshot=lambda agent_id: vault.snapshot(agent_id).memories,
            trace=TraceRing(lambda: live.get().injection.trace_turns),
            capture=capture, holds_secret=screen.holds_secret,
        )
        eraser.channels = injector
        if feed is not None:  # other sidecars' resets and erasures drop this one's copies
            _follow_channels(feed, ResetElsewhere(injector.states, injector.trace, capture))
            injector.follow_erasures = feed.catch_up
            states = injector.states
            states.merge_check = lambda c: feed.not_reset(channel_digest(c))
            states.user_check = lambda owner: feed.not_erased(user_digest(owner))
            states.still_there = repos.memories.still_there
            feed.on_users = states.users_erased
        drain.start()  # with the captures a crash left pending
        drain.wake()
        owners = ChannelOwners(db, injector.states)
        eraser.owners = owners  # a user's channels are erased with their owner rows
        sweeper = ChannelSweeper(owners, injector.reset, live.map(lambda c: c.injection),
                                 partial(retention_once, eraser,
                                         lambda agent: live.get().injection_for(agent)))
        sweeper.start()
        reembed = None
        if stored != target:
            reembed = ReEmbed(memories, repos.models, _embedder(wanted, config), target,
                              lambda model: retriever.switch_model(model, repos.memories),
                              config.embed_batch_size)
            log.info("re-embedding the store", extra={"model": wanted, "stored": str(stored)})
        log.info(
            "app opened",
            extra={"db": str(config.db_path), "memories": memories.memories.count(),
                   "elapsed_ms": round((time.perf_counter() - start) * 1000, 1)},
        )
        metrics = _metrics(faults, Sources(
            memories=retriever.live.snapshot, vector_index=vectors.stats,
            bm25=lambda: (retriever.lexical.segment_count, len(retriever.lexical)),
            queue_depth=lambda: state_writes.depth, reloads=lambda: settings.reloads,
            open_channels=lambda: int(db.execute("SELECT COUNT(*) FROM channel_owners")[0][0]),
            reembed=reembed.progress if reembed is not None else lambda: (0, 0),
            captures=capture.outcomes,
            resident=lambda: retriever.resident.stats().figures(),
        ), agent_series=config.http.metrics_agents)
        _check_writable(db, faults)
        return cls(
            config=config, db=db, embedder=embedder, memories=memories, retriever=retriever,
            settings=settings, vault=vault, injector=injector, owners=owners, sweeper=sweeper,
            lock=lock, metrics=metrics, eraser=eraser, vectors=vectors, reembed=reembed,
            feed=feed, faults=faults,
        )

    def warm_up(self) -> None:
        """Compile kernels and run the model once so the first request is not slow."""
        spent = warm_up_all()
        self.embedder.embed_one("warm up")
        self.embedder.embed_query("warm up " * 128)  # the long-query session, if any
        heap.freeze_start_up()  # the loaded indexes: out of every later garbage collection
        log.info("warm-up done", extra={"kernels_s": spent})
        if self.reembed is not None:
            self.reembed.start()

    def close(self) -> None:
        """Close in reverse order of building: queued state writes first, the database last."""
        if self.reembed is not None:
            self.reembed.stop()  # after its batch in flight; the next start resumes
        if self.feed is not None:
            self.feed.close()
        self.sweeper.close()
        self.injector.close()  # the state and access writes queued behind replies
        if self.injector.capture is not None:
            self.injector.capture.drain.close()  # what is pending stays for the next start
        self.eraser.scrub.close()  # an erasure's scrub still queued runs here
        self.settings.close()
        stop = getattr(self.retriever, "close", None)
        if stop is not None:
            stop()  # the retrieval worker thread
        if self.vectors is not None:
            self.vectors.close()  # saves the hnsw index when it changed
        self.faults.close()
        self.db.close()
        self.lock.release()
        heap.unfreeze()


def _remove_stale_temps(data_dir: Path, config_file: Path) -> None:
    """The temp files a crash (kill -9, power loss) left behind our atomic writes."""
    remove_stale_temps(data_dir, atomic=(config_file, data_dir / TOKENS_FILENAME), fixed=(
        *lexical_persist.temp_paths(data_dir / POSTINGS_FILE),
        *vector_persist.temp_paths(data_dir / vector_persist.INDEX_FILE)))


def _metrics(faults: DiskFaults, sources: Sources, agent_series: int) -> Metrics:
    """The registry, counting the disk's refusals from start-up on."""
    metrics = Metrics(sources, agent_series=agent_series)
    for reason, refused in faults.counts.items():
        metrics.disk_refusals.labels(reason).inc(refused)
    faults.on_refusal.append(lambda reason: metrics.disk_refusals.labels(reason).inc())
    return metrics


def _check_writable(db: SqlStore, faults: DiskFaults) -> None:
    """SQLite: try a write that changes nothing, then again every few seconds while the disk
    refuses writes. Said loudly when it does at start (reads are served, writes resume once
    the disk takes them)."""
    if isinstance(db, Database):
        faults.probe = db.probe
        try:
            db.probe()
        except StorageFault as fault:
            faults.refused(fault, counted=False)
        else:
            faults.accepted()
        faults.watch()
    if faults.current is not None:
        log.warning("READ-ONLY: the data dir refuses writes; reads are served, writes are "
                    "refused until it takes them again: %s", faults.current.message,
                    extra={"reason": faults.current.reason, "path": faults.current.path})


def _stored_model(repos: Repositories) -> ModelIdentity | None:
    recorded = repos.models.get(MODEL_KEY)
    try:
        return None if recorded is None else ModelIdentity.from_json(recorded)
    except (ValueError, TypeError):
        return None  # unreadable: treated as another model (re-embedded)


def _feed(db: SqlStore, memories: MemoryService, retention_days: float,
          retriever: HybridRetriever, scrub: DiskScrub) -> ChangeFeed | None:
    """PostgreSQL: the change feed that keeps this sidecar's indexes (and, after another
    sidecar's erasure, their files) current with others'."""
    if db.dialect != "postgres":
        return None
    from sidecar.memory.remote import RemoteWrites
    from sidecar.store.postgres.db import PgDatabase
    from sidecar.store.postgres.feed import ChangeFeed

    assert isinstance(db, PgDatabase)
    feed = ChangeFeed(db, RemoteWrites(memories, retriever.labels_of, scrub.later),
                      retention_days * 86_400)
    memories.serialize = feed.exclusive
    return feed


def _follow_channels(feed: ChangeFeed, elsewhere: ResetElsewhere) -> None:
    from sidecar.memory.remote import RemoteWrites

    feed.on_channels = elsewhere
    assert isinstance(feed.follower, RemoteWrites)
    feed.follower.erased = elsewhere.erased


def _serving_embedder(stored: ModelIdentity | None, wanted: str,
                      config: ServerConfig) -> Embedder:
    """The model that embeds queries like the stored vectors; ``wanted`` when none is stored
    or this install lacks the stored graph (then said once: queries and the old vectors differ
    until the re-embed swaps)."""
    files = serving_files(stored) if stored is not None else None
    if files is not None:
        options: dict[str, Any] = dict(config.embedder_options())
        return Embedder(files, **options)
    if stored is not None:
        log.warning("the stored vectors come from a model this install does not have; queries "
                    "use the configured one until the re-embed swaps",
                    extra={"stored": stored.name, "model": wanted})
    return _embedder(wanted, config)


def _embedder(name: str, config: ServerConfig) -> Embedder:
    options: dict[str, Any] = dict(config.embedder_options())
    return Embedder(model_files(name), **options)
