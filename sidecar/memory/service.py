"""The write and read path for memories and edges (no protobuf, no gRPC)."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar

import numpy as np

from sidecar.deadline import alive, ensure_alive
from sidecar.embedding import Embedder
from sidecar.errors import (
    AlreadyExists,
    DomainError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    StorageFault,
)
from sidecar.memory.events import Listeners
from sidecar.memory.restore import new_memory, unchanged
from sidecar.memory.validation import (
    check_draft,
    check_id,
    check_relation,
    check_unit,
    resolve_importance,
)
from sidecar.records import DEFAULT_EDGE_WEIGHT, Edge, Memory, MemoryDraft, Relation, Tier
from sidecar.redact import echo
from sidecar.store.memories import ListQuery
from sidecar.store.repos import Repositories
from sidecar.store.versions import FORGET, PROMOTE, RESTORE, UPDATE
from sidecar.timing import now_us

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class UpsertResult:
    memory: Memory
    created: bool
    deduplicated: bool = False
    unchanged: bool = False  # the id was stored with these very fields: nothing written

    @property
    def written(self) -> bool:
        return not (self.deduplicated or self.unchanged)


@dataclass(slots=True)
class ImportSummary:
    received: int = 0
    stored: int = 0
    deduplicated: int = 0
    ids: list[str] = field(default_factory=list)
    errors: list[tuple[int, str, DomainError]] = field(default_factory=list)
    interrupted: bool = False  # the caller went away; batches after that were not committed

    @property
    def rejected(self) -> int:
        return len(self.errors)


class WriteGate(Protocol):
    """A check run on every write after embedding, inside the write lock.

    Raise a DomainError to reject; return an existing Memory to resolve the write to it
    (nothing is stored); return None to let it through.
    """

    def check(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> Memory | None: ...


class DraftResolver(Protocol):
    """Runs before the gates, inside the write lock and transaction; may retarget a draft
    (e.g. a REGISTER write with a known topic_id gets that register's id)."""

    def resolve(self, draft: MemoryDraft, field: str) -> MemoryDraft: ...


class MemoryService:
    def __init__(
        self,
        repos: Repositories,
        embedder: Embedder,
        max_content_chars: int = 16_384,
        embed_batch_size: int = 64,
    ) -> None:
        self.repos = repos
        self.db = repos.db
        self.memories = repos.memories
        self.edges = repos.edges
        self.embedder = embedder
        self.max_content_chars = max_content_chars
        self.embed_batch_size = embed_batch_size
        self.listeners = Listeners()
        self.gates: list[WriteGate] = []
        self.resolvers: list[DraftResolver] = []
        self._write_lock = threading.RLock()
        # Called first in every write transaction with the scopes it writes ((agent_id,
        # user_id); None: any): on a shared store, waits for the other sidecars' writes in
        # flight into them and applies every committed one here, so the gates see every row.
        self.serialize: Callable[[Collection[Scope] | None], None] | None = None
        # True while a gate reads all of an agent's rows (the capacity gate counts them):
        # a write then holds the agent's every scope, not only its user's.
        self.agent_wide: Callable[[], bool] = lambda: False
        # Index updates a gate asked for inside the write transaction (e.g. the captures the
        # capacity gate erased to make room), run once it commits; dropped if it rolls back.
        self._after: list[Callable[[], None]] = []

    # --- writes -------------------------------------------------------------------------

    def after_commit(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the write transaction in progress commits (never if it rolls
        back). Called inside a write (a gate, a resolver), with the write lock held."""
        self._after.append(action)

    @contextmanager
    def committing(self) -> Iterator[None]:
        """The write transaction: ``after_commit`` actions run after its commit. Hold the
        write lock."""
        try:
            with self.db.transaction():
                yield
        except BaseException:
            self._after.clear()
            raise
        done, self._after = self._after, []
        for action in done:
            action()

    @property
    def write_lock(self) -> threading.RLock:
        """Held by every write (the erasure takes it for each of its transactions)."""
        return self._write_lock

    @contextmanager
    def writes_paused(self) -> Iterator[None]:
        """No write starts or finishes inside the block (a model switch runs in it)."""
        with self._write_lock:
            yield

    def upsert(self, draft: MemoryDraft) -> UpsertResult:
        check_draft(draft, self.max_content_chars)
        generation = self.embedder.generation
        embedding = self.embedder.embed_one(draft.content)
        with self._write_lock:
            if self.embedder.generation != generation:  # the model switched meanwhile
                embedding = self.embedder.embed_one(draft.content)
            with self.committing():
                self.hold(lambda: self._scopes([draft]))
                result = self._write_one(draft, embedding, "memory")
                ensure_alive()  # right before the commit: an expired call writes nothing
            if result.written:
                self.listeners.stored([result.memory], embedding[None, :])
        return result

    def write_claimed(self, draft: MemoryDraft, embedding: np.ndarray,
                      claim: Callable[[], bool], after: Callable[[UpsertResult], None],
                      ) -> UpsertResult | None:
        """Write an already embedded draft in one transaction with ``claim`` (run first; False
        writes nothing and returns None) and ``after`` (given the result). The gates decide
        as for any write: a DomainError rolls all of it back."""
        check_draft(draft, self.max_content_chars, prefix="capture")
        with self._write_lock:
            with self.committing():
                self.hold(lambda: self._scopes([draft]))
                if not claim():
                    return None
                result = self._write_one(draft, embedding, "capture")
                after(result)
            if result.written:
                self.listeners.stored([result.memory], embedding[None, :])
        return result

    def import_stream(
        self, items: Iterable[MemoryDraft | DomainError], batch_size: int = 256
    ) -> ImportSummary:
        """Validate, embed in batches and commit each batch atomically.

        An item may be a DomainError (it could not even be parsed): it is rejected at its
        position. A failure of one item rejects that item only. A crash loses at most the
        batch in flight; every committed batch is complete.
        """
        summary = ImportSummary()
        for batch in _batches(enumerate(items), batch_size):
            summary.received += len(batch)
            valid = self._validated(batch, summary)
            if valid:
                if not self._commit_import_batch(valid, summary):
                    summary.interrupted = True
                    break
        summary.interrupted = summary.interrupted or not alive()
        summary.errors.sort(key=lambda e: e[0])
        log.info(
            "import interrupted" if summary.interrupted else "import finished",
            extra={"received": summary.received, "stored": summary.stored,
                   "rejected": summary.rejected},
        )
        return summary

    def import_batch(self, items: list[MemoryDraft | DomainError]) -> ImportSummary:
        """One acknowledged batch: every valid item in one transaction, committed only while
        the caller still waits (else DeadlineExceeded and nothing is written). An item whose
        id is stored with the same fields writes nothing and counts as deduplicated."""
        summary = ImportSummary(received=len(items))
        valid = self._validated(list(enumerate(items)), summary)
        if valid and not self._commit_import_batch(valid, summary, idempotent=True):
            ensure_alive()
        summary.errors.sort(key=lambda e: e[0])
        return summary

    def _validated(self, batch: list[tuple[int, MemoryDraft | DomainError]],
                   summary: ImportSummary) -> list[tuple[int, MemoryDraft]]:
        """The batch's items that pass the input checks; the others go to ``summary``."""
        valid: list[tuple[int, MemoryDraft]] = []
        for index, draft in batch:
            if isinstance(draft, DomainError):
                summary.errors.append((index, "", draft))
                continue
            try:
                check_draft(draft, self.max_content_chars, prefix=f"items[{index}]")
                valid.append((index, draft))
            except DomainError as err:
                summary.errors.append((index, draft.id, err))
        return valid

    def _commit_import_batch(
        self, valid: list[tuple[int, MemoryDraft]], summary: ImportSummary,
        idempotent: bool = False,
    ) -> bool:
        """Embed and commit one batch; False (nothing written) when the caller left meanwhile.

        Items already stored with the same fields write nothing. ``idempotent``: the caller
        is checked once more right before the commit (DeadlineExceeded rolls back)."""
        stored: list[Memory] = []
        stored_rows: list[int] = []
        generation = self.embedder.generation
        vectors = self.embedder.embed([d.content for _, d in valid], self.embed_batch_size)
        if not alive():
            return False
        with self._write_lock:
            if self.embedder.generation != generation:  # the model switched meanwhile
                vectors = self.embedder.embed([d.content for _, d in valid],
                                              self.embed_batch_size)
            with self.committing():
                self.hold(lambda: self._scopes([draft for _, draft in valid]))
                for row, (index, draft) in enumerate(valid):
                    mark = len(self._after)
                    try:
                        with self.db.transaction():  # savepoint: one bad item rolls back alone
                            result = self._write_one(draft, vectors[row], f"items[{index}]")
                    except StorageFault:
                        raise  # the disk refused the batch, not the item
                    except DomainError as err:
                        del self._after[mark:]  # what its gates asked for rolled back too
                        summary.errors.append((index, draft.id, err))
                        continue
                    summary.ids.append(result.memory.id)
                    if not result.written:  # a resent item counts as deduplicated
                        summary.deduplicated += 1
                        continue
                    summary.stored += 1
                    if not result.memory.forgotten:  # a restored forgotten one is never served
                        stored.append(result.memory)
                        stored_rows.append(row)
                if idempotent:
                    ensure_alive()  # right before the commit: an expired call writes nothing
            if stored:
                self.listeners.stored(stored, vectors[stored_rows])
        return True

    def hold(self, scopes: Callable[[], Collection[Scope] | None]) -> None:
        """First in a write transaction: ``serialize`` the ``scopes()`` it writes (None:
        any scope), on a shared store."""
        if self.serialize is not None:
            self.serialize(scopes())

    def _scopes(self, items: Iterable[MemoryDraft | Memory]) -> set[Scope]:
        """The scopes a write of ``items`` holds (a memory keeps its agent and user)."""
        if self.agent_wide():
            return {(item.agent_id, "") for item in items}
        return {(item.agent_id, item.user_id) for item in items}

    def _scopes_of(self, memory_ids: list[str]) -> set[Scope]:
        """The scopes of stored memories (none for an id not stored: nothing to hold)."""
        return self._scopes(self.memories.get_many(memory_ids).values())

    def _write_one(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> UpsertResult:
        with self.db.transaction():
            for resolver in self.resolvers:
                draft = resolver.resolve(draft, field)
            resent = self._already_stored(draft, field)
            if resent is not None:  # same version, no history row
                return UpsertResult(resent, created=False, unchanged=True)
            for gate in self.gates:
                existing_match = gate.check(draft, embedding, field)
                if existing_match is not None:
                    return UpsertResult(existing_match, created=False, deduplicated=True)
            importance = resolve_importance(draft)
            ts = now_us()
            existing = self.memories.get(draft.id) if draft.id else None
            if existing is not None and existing.agent_id != draft.agent_id:
                raise PermissionDenied(
                    f"{field}.id names a memory of another scope; a memory keeps its agent_id "
                    "(choose another id, or write as its owner)", field=f"{field}.id")
            if existing is not None and existing.private_key != draft.private_key:
                raise PermissionDenied(
                    f"{field}.id names a memory private to another user or channel; a memory "
                    "keeps its user_id, channel_private and (when channel_private) channel_id",
                    field=f"{field}.id")
            if existing is None:
                memory = new_memory(draft, draft.id or str(uuid.uuid4()), importance, ts)
                return UpsertResult(self.memories.insert(memory, embedding), created=True)
            updated = replace(
                existing, content=draft.content, type=draft.type, importance=importance,
                updated_at=max(ts, existing.updated_at + 1), source=draft.source,
                channel_id=draft.channel_id, agent_id=draft.agent_id, forgotten=False,
                version=existing.version + 1, tier=draft.tier, topic_id=draft.topic_id,
                user_id=draft.user_id, channel_private=draft.channel_private,
            )
            stored = self.memories.update(updated, embedding, event=_update_event(existing, draft))
            return UpsertResult(stored, created=False)

    def _already_stored(self, draft: MemoryDraft, field: str) -> Memory | None:
        """The stored memory when ``draft`` would change nothing; a restore of an id stored
        with other fields is refused (it never overwrites)."""
        existing = self.memories.get(draft.id) if draft.id else None
        if existing is None:
            return None
        if unchanged(existing, draft):
            return existing
        if draft.restored is not None:
            raise AlreadyExists(
                f"{field}.id {echo(draft.id)} is already stored with other fields (version "
                f"{existing.version}); a restore never overwrites: import into an empty store, "
                "or drop the server-owned fields (version, created_at, updated_at, forgotten) "
                "to update it in place", field=f"{field}.id", reason="ALREADY_STORED")
        return None

    def forget(self, memory_id: str, source: str = "", agent_id: str = "",
               shared_ok: bool = True) -> tuple[Memory, bool]:
        """Forget a memory of ``agent_id``'s scope or a shared one (when ``shared_ok``);
        another agent's is NOT_FOUND."""
        check_id(memory_id, "id")
        with self._write_lock:
            with self.db.transaction():
                self.hold(lambda: self._scopes_of([memory_id]))
                existing = self.writable(memory_id, agent_id, shared_ok)
                if existing.forgotten:
                    return existing, False
                updated = replace(
                    existing, forgotten=True, version=existing.version + 1,
                    updated_at=max(now_us(), existing.updated_at + 1),
                )
                stored = self.memories.update(updated, None, event=FORGET, actor=source)
            self.listeners.forgotten([stored])
        log.info("memory forgotten", extra={"memory_id": memory_id, "by": source,
                                            "agent": agent_id})
        return stored, True

    def add_edge(
        self, source_id: str, target_id: str, relation: Relation, weight: float | None,
        agent_id: str = "", shared_ok: bool = True,
    ) -> Edge:
        """Link two memories of ``agent_id``'s scope or shared ones (when ``shared_ok``)."""
        check_id(source_id, "edge.source_id")
        check_id(target_id, "edge.target_id")
        check_relation(relation)
        if source_id == target_id:
            raise InvalidArgument(
                f"edge.target_id equals edge.source_id ({echo(source_id)}); a memory cannot be "
                "linked to itself",
                field="edge.target_id",
                reason="SELF_EDGE",
            )
        value = DEFAULT_EDGE_WEIGHT if weight is None else check_unit(weight, "edge.weight")
        with self._write_lock:
            with self.db.transaction():
                self.hold(lambda: self._scopes_of([source_id, target_id]))
                self.writable(source_id, agent_id, shared_ok, "edge.source_id")
                self.writable(target_id, agent_id, shared_ok, "edge.target_id")
                edge = self.edges.upsert(Edge(source_id, target_id, relation, value, now_us()))
            self.listeners.edges([edge], [])
        return edge

    def remove_edge(
        self, source_id: str, target_id: str, relation: Relation, agent_id: str = "",
        shared_ok: bool = True,
    ) -> None:
        check_id(source_id, "source_id")
        check_id(target_id, "target_id")
        check_relation(relation, "relation")
        with self._write_lock:
            self.writable(source_id, agent_id, shared_ok, "source_id")
            self.writable(target_id, agent_id, shared_ok, "target_id")
            edge = self.edges.get(source_id, target_id, relation)
            if edge is None or not self.edges.remove(source_id, target_id, relation):
                raise NotFound(
                    f"no {relation.name} edge from {echo(source_id)} to {echo(target_id)}",
                    field="source_id",
                )
            self.listeners.edges([], [edge])

    # --- reads --------------------------------------------------------------------------

    def get(self, memory_id: str, agent_id: str = "") -> Memory:
        """A memory visible to ``agent_id``: shared, or its own ('' sees shared ones only)."""
        check_id(memory_id, "id")
        return self._require(memory_id, agent_id=agent_id)

    def list(self, query: ListQuery) -> tuple[list[Memory], str]:
        if not 1 <= query.page_size <= 1000:
            raise InvalidArgument(
                f"page_size must be between 1 and 1000 (got {query.page_size})", field="page_size"
            )
        return self.memories.list(query)

    def writable(self, memory_id: str, agent_id: str, shared_ok: bool = True,
                 field: str = "id") -> Memory:
        """A memory ``agent_id`` may change: its own, or shared when ``shared_ok``."""
        memory = self._require(memory_id, field, agent_id)
        if not memory.agent_id and not shared_ok:
            raise PermissionDenied(
                f"{field}: shared memories are changed with the operator token only "
                "(server.auth.shared_write)", field=field)
        return memory

    def _require(self, memory_id: str, field: str = "id", agent_id: str = "") -> Memory:
        """The memory, if visible to ``agent_id``; another scope's is NOT_FOUND like a missing
        one (its existence is not revealed)."""
        memory = self.memories.get(memory_id)
        if memory is None or not memory.visible_to(agent_id):
            scope = f"agent {echo(agent_id)}" if agent_id else "the shared scope"
            raise NotFound(f"{field}: no memory with id {echo(memory_id)} visible to {scope}",
                           field=field)
        return memory


def _update_event(existing: Memory, draft: MemoryDraft) -> str:
    if existing.forgotten:
        return RESTORE
    if existing.tier == Tier.REGISTER and draft.tier == Tier.CANON:
        return PROMOTE
    return UPDATE


T = TypeVar("T")
Scope = tuple[str, str]  # (agent_id, user_id): what a shared store's write locks


def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
