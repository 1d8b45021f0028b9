"""Memory rows: insert/update/forget/get/list, with embeddings stored as float32 blobs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sidecar.records import Memory, MemoryType, Tier, memory_type, tier_of
from sidecar.store.contract import Row, SqlStore, unhinted
from sidecar.store.page_tokens import PageTokens
from sidecar.store.scope_keys import ScopeKey, erase_lock_statement
from sidecar.store.versions import CREATE, UPDATE, VersionRepo

TOUCH_CHUNK = 500  # ids per access-record statement (SQLite binds at most 32,766)
COLUMNS = (
    "seq, id, content, type, importance, created_at, updated_at, last_accessed_at, "
    "access_count, source, channel_id, agent_id, forgotten, version, tier, topic_id, user_id, "
    "channel_private"
)


def row_to_memory(row: Row) -> Memory:
    return Memory(
        seq=row[0],
        id=row[1],
        content=row[2],
        type=memory_type(row[3]),
        importance=float(row[4]),
        created_at=row[5],
        updated_at=row[6],
        last_accessed_at=row[7],
        access_count=row[8],
        source=row[9],
        channel_id=row[10],
        agent_id=row[11],
        forgotten=bool(row[12]),
        version=row[13],
        tier=tier_of(row[14]),
        topic_id=row[15],
        user_id=row[16],
        channel_private=bool(row[17]),
    )


def embedding_to_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def scope_filter(user_id: str) -> str:
    """The condition on ``user_id`` of a scope's rows, its value bound once: through the
    partial index memories_user or memories_own (the literal conditions let SQLite use them;
    left to itself it walks the agent's every row instead)."""
    return "user_id = ? AND user_id != ''" if user_id else "user_id = ? AND user_id = ''"


def blob_to_embedding(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def embeddings_of(rows: Sequence[Row]) -> np.ndarray:
    """The embeddings of rows whose last column is one, as one (n, dim) float32 array."""
    return np.frombuffer(b"".join(row[-1] for row in rows), np.float32).reshape(len(rows), -1)


INSERT = (
    "INSERT INTO memories (id, content, type, importance, created_at, updated_at, "
    "last_accessed_at, access_count, source, channel_id, agent_id, forgotten, version, "
    "tier, topic_id, user_id, channel_private, embedding) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def memory_row(memory: Memory, embedding: np.ndarray) -> tuple[Any, ...]:
    """The parameters of ``INSERT`` for ``memory`` (its seq is left to the store)."""
    return (
        memory.id, memory.content, int(memory.type), memory.importance, memory.created_at,
        memory.updated_at, memory.last_accessed_at, memory.access_count, memory.source,
        memory.channel_id, memory.agent_id, int(memory.forgotten), memory.version,
        int(memory.tier), memory.topic_id, memory.user_id, int(memory.channel_private),
        embedding_to_blob(embedding),
    )


@dataclass(frozen=True, slots=True)
class ListQuery:
    types: tuple[MemoryType, ...] = ()
    channel_id: str = ""
    agent_id: str = ""
    sort: str = "recent"  # "recent" | "importance" | "stored" (seq ascending)
    page_size: int = 100
    page_token: str = ""
    include_forgotten: bool = False
    tiers: tuple[Tier, ...] = ()
    all_agents: bool = False  # every scope; agent_id must then be ''
    source: str = ""  # only memories written with this source ('' = any)
    user_id: str = ""  # only memories of this end user ('' = any)


class MemoryRepo:
    """Reads and writes memory rows. Callers group writes with ``db.transaction()``."""

    def __init__(self, db: SqlStore, versions: VersionRepo,
                 page_tokens: PageTokens | None = None) -> None:
        self.db = db
        self.versions = versions  # written in the same transaction as each change
        self.page_tokens = page_tokens or PageTokens()

    def get(self, memory_id: str) -> Memory | None:
        row = self.db.query_one(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return row_to_memory(row) if row else None

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        found: dict[str, Memory] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {COLUMNS} FROM memories WHERE id IN ({marks})"
            for row in self.db.execute(sql, tuple(chunk)):
                found[row[1]] = row_to_memory(row)
        return found

    def with_embeddings(self, ids: Sequence[str]) -> list[tuple[Memory, np.ndarray]]:
        """The rows of ``ids`` that exist (forgotten too) with their embeddings, in seq order."""
        found: list[tuple[Memory, np.ndarray]] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT {COLUMNS}, embedding FROM memories WHERE id IN ({marks})", tuple(chunk))
            found += [(row_to_memory(row), blob_to_embedding(row[-1])) for row in rows]
        return sorted(found, key=lambda pair: pair[0].seq)

    def forgotten_ids(self) -> list[str]:
        return [str(r[0]) for r in self.db.execute("SELECT id FROM memories WHERE forgotten = 1")]

    def still_there(self, memories: Sequence[Memory], error: Exception,
                    also: Collection[ScopeKey] = ()) -> None:
        """In a turn's transaction or batch: ``error`` (nothing of it written) unless every
        one of ``memories`` still has a row (forgotten ones too). On a shared store the
        scopes' erasure locks are held shared first (with those of ``also``, in one
        statement), so an erasure of one of them either committed before the check reads,
        or waits for the turn's commit and then erases what it wrote (``scope_keys``,
        decision 0047)."""
        if self.db.dialect == "postgres":
            self.db.execute(*erase_lock_statement(
                {(m.agent_id, m.user_id) for m in memories} | set(also), exclusive=False))
        if not memories:
            return
        unique = sorted({m.id for m in memories})
        ids = unique + unique[-1:] * (_padded(len(unique)) - len(unique))
        self.db.check(f"(SELECT COUNT(*) FROM memories WHERE id IN ({','.join('?' * len(ids))}))"
                      " = ?", (*ids, len(unique)), error)

    def exists(self, memory_id: str) -> bool:
        return self.db.query_one("SELECT 1 FROM memories WHERE id = ?", (memory_id,)) is not None

    def embedding(self, memory_id: str) -> np.ndarray | None:
        row = self.db.query_one("SELECT embedding FROM memories WHERE id = ?", (memory_id,))
        return blob_to_embedding(row[0]) if row else None

    def insert(self, memory: Memory, embedding: np.ndarray, *, actor: str | None = None) -> Memory:
        """Insert a new row and its first history version (actor defaults to the source)."""
        with self.db.transaction():
            stored = self._insert(memory, embedding)
            self.versions.append(stored, CREATE, _actor(stored, actor), stored.updated_at)
        return stored

    def insert_many(self, memories: Sequence[Memory], embeddings: np.ndarray) -> None:
        """Insert new rows and their first history versions (actor: each one's source) in
        one transaction, in order: a bulk load. Seqs are given by the store, not read back."""
        with self.db.transaction():
            self.db.executemany(INSERT, [memory_row(m, e) for m, e in
                                         zip(memories, embeddings, strict=True)])
            self.versions.append_many(memories, CREATE)

    def _insert(self, memory: Memory, embedding: np.ndarray) -> Memory:
        self.db.execute(INSERT, memory_row(memory, embedding))
        stored = self.get(memory.id)
        assert stored is not None
        return stored

    def update(
        self, memory: Memory, embedding: np.ndarray | None, *, event: str = UPDATE,
        actor: str | None = None,
    ) -> Memory:
        """Write every mutable field of ``memory`` (matched by id); embedding only when given.

        Appends a history version (``event``: update/forget/promote/restore) in the same
        transaction; ``actor`` defaults to the memory's source.
        """
        with self.db.transaction():
            stored = self._update(memory, embedding)
            self.versions.append(stored, event, _actor(stored, actor), stored.updated_at)
        return stored

    def _update(self, memory: Memory, embedding: np.ndarray | None) -> Memory:
        params: list[Any] = [
            memory.content, int(memory.type), memory.importance, memory.updated_at,
            memory.source, memory.channel_id, memory.agent_id, int(memory.forgotten),
            memory.version, int(memory.tier), memory.topic_id, memory.user_id,
            int(memory.channel_private),
        ]
        set_embedding = ""
        if embedding is not None:
            set_embedding = ", embedding = ?"
            params.append(embedding_to_blob(embedding))
        params.append(memory.id)
        self.db.execute(
            "UPDATE memories SET content = ?, type = ?, importance = ?, updated_at = ?, "
            "source = ?, channel_id = ?, agent_id = ?, forgotten = ?, version = ?, tier = ?, "
            f"topic_id = ?, user_id = ?, channel_private = ?{set_embedding} WHERE id = ?",
            tuple(params),
        )
        stored = self.get(memory.id)
        assert stored is not None
        return stored

    def touch(self, ids: Iterable[str], now_us: int) -> None:
        """Record an access (Get, Inject): last_accessed_at and access_count (+1 per time an
        id is listed). One statement per TOUCH_CHUNK ids (one round trip to a server)."""
        by_times: dict[int, list[str]] = {}
        for memory_id, times in sorted(Counter(ids).items()):
            by_times.setdefault(times, []).append(memory_id)
        for times, group in by_times.items():
            for at in range(0, len(group), TOUCH_CHUNK):
                chunk = group[at:at + TOUCH_CHUNK]
                self.db.execute(
                    "UPDATE memories SET last_accessed_at = ?, access_count = access_count + ? "
                    f"WHERE id IN ({','.join('?' * len(chunk))})", (now_us, times, *chunk))

    def iter_live_embeddings(self, batch: int = 4096) -> Iterable[tuple[list[Memory], np.ndarray]]:
        """All live memories with their embeddings, in seq order, in batches."""
        last = 0
        while True:
            # "+forgotten": keeps SQLite on the rowid range instead of an index on forgotten
            # (that plan re-sorts every live row per batch, quadratic in the store's size).
            rows = self.db.execute(
                f"SELECT {COLUMNS}, embedding FROM memories WHERE "
                f"{unhinted(self.db, 'forgotten')} = 0 AND seq > ? ORDER BY seq LIMIT ?",
                (last, batch),
            )
            if not rows:
                return
            memories = [row_to_memory(row) for row in rows]
            vectors = np.vstack([blob_to_embedding(row[-1]) for row in rows])
            last = memories[-1].seq
            yield memories, vectors

    def iter_scope(self, agent_id: str, user_id: str,
                   batch: int = 4096) -> Iterable[tuple[list[Memory], np.ndarray]]:
        """The live memories of one scope (agent_id and user_id exactly; '' '' = the shared
        ones) with their embeddings, in seq order, in batches."""
        index = "memories_user" if user_id else "memories_own"
        hint = f" INDEXED BY {index}" if self.db.dialect == "sqlite" else ""
        last = 0
        while True:
            rows = self.db.read_apart(
                f"SELECT {COLUMNS}, embedding FROM memories{hint} WHERE agent_id = ? AND "
                f"{scope_filter(user_id)} AND forgotten = 0 AND seq > ? ORDER BY seq LIMIT ?",
                (agent_id, user_id, last, batch))
            if not rows:
                return
            memories = [row_to_memory(row) for row in rows]
            last = memories[-1].seq
            yield memories, embeddings_of(rows)
            if len(rows) < batch:  # the last batch: no read that finds nothing
                return

    def agent_rows(self, agent_id: str, dim: int) -> tuple[list[str], np.ndarray]:
        """Ids and embeddings of the live memories owned by exactly ``agent_id`` ('' = the
        shared ones), every user's included, in seq order."""
        rows = self.db.execute(
            "SELECT id, embedding FROM memories WHERE agent_id = ? AND forgotten = 0 "
            "ORDER BY seq", (agent_id,))
        if not rows:
            return [], np.zeros((0, dim), np.float32)
        return [str(r[0]) for r in rows], np.vstack([blob_to_embedding(r[1]) for r in rows])

    def iter_live_vectors(self, batch: int = 8192) -> Iterable[tuple[np.ndarray, np.ndarray]]:
        """(seqs int64, embeddings float32 (n, dim)) of live memories, in seq order, in batches.

        The vector index's start-up read: no Memory objects are built, which makes it several
        times faster than ``iter_live_embeddings`` on a large store.
        """
        last = 0
        while True:
            rows = self.db.execute(
                f"SELECT seq, embedding FROM memories WHERE {unhinted(self.db, 'forgotten')} = 0 "
                "AND seq > ? ORDER BY seq LIMIT ?",
                (last, batch),
            )
            if not rows:
                return
            seqs = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            vectors = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
            last = int(seqs[-1])
            yield seqs, vectors.reshape(len(rows), -1)

    def mean_chars(self, sample: int = 1000) -> float:
        """The mean length of the content of the first ``sample`` memories (an estimate of
        the store's: one page of reads whatever its size)."""
        row = self.db.query_one("SELECT avg(length(content)) FROM (SELECT content FROM "
                                "memories ORDER BY seq LIMIT ?) AS sample", (sample,))
        return float(row[0]) if row and row[0] is not None else 0.0

    def max_seq(self) -> int:
        """The highest seq stored (0 for an empty store)."""
        row = self.db.query_one("SELECT max(seq) FROM memories")
        return int(row[0]) if row and row[0] is not None else 0

    def count(self, *, include_forgotten: bool = False) -> int:
        where = "" if include_forgotten else " WHERE forgotten = 0"
        row = self.db.query_one(f"SELECT count(*) FROM memories{where}")
        return int(row[0]) if row else 0

    def list(self, query: ListQuery) -> tuple[list[Memory], str]:
        """One page in the requested order and the token of the next page ('' at the end)."""
        where, params = _filters(query)
        keys: tuple[str, ...] = ("updated_at", "seq")
        if query.sort == "importance":
            keys = ("importance", "updated_at", "seq")
        elif query.sort == "stored":
            keys = ("seq",)
        order = "ASC" if query.sort == "stored" else "DESC"
        if query.page_token:
            after = self.page_tokens.decode(query.page_token, query.sort, len(keys))
            where.append(_keyset_clause(keys, ">" if order == "ASC" else "<"))
            params.extend(_keyset_params(after))
        sql = (
            f"SELECT {COLUMNS} FROM memories"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY " + ", ".join(f"{k} {order}" for k in keys)
            + " LIMIT ?"
        )
        rows = self.db.execute(sql, (*params, query.page_size + 1))
        memories = [row_to_memory(row) for row in rows[: query.page_size]]
        token = ""
        if len(rows) > query.page_size and memories:
            last = memories[-1]
            token = self.page_tokens.encode(query.sort, [getattr(last, k) for k in keys])
        return memories, token


def _actor(memory: Memory, actor: str | None) -> str:
    return memory.source if actor is None else actor


def _filters(query: ListQuery) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if not query.include_forgotten:
        where.append("forgotten = 0")
    if query.types:
        where.append(f"type IN ({','.join('?' * len(query.types))})")
        params.extend(int(t) for t in query.types)
    if query.tiers:
        where.append(f"tier IN ({','.join('?' * len(query.tiers))})")
        params.extend(int(t) for t in query.tiers)
    if query.channel_id:
        where.append("channel_id = ?")
        params.append(query.channel_id)
    if query.source:
        where.append("source = ?")
        params.append(query.source)
    if query.user_id:
        where.append("user_id = ?")
        params.append(query.user_id)
    if not query.all_agents:
        where.append("agent_id IN ('', ?)")  # shared + the agent's own; '' = shared only
        params.append(query.agent_id)
    return where, params


def _keyset_clause(keys: tuple[str, ...], after: str = "<") -> str:
    """Rows strictly after the token's row in the lexicographic order of ``keys``
    (``after``: "<" descending, ">" ascending)."""
    ors = []
    for i, key in enumerate(keys):
        eqs = [f"{k} = ?" for k in keys[:i]]
        ors.append("(" + " AND ".join([*eqs, f"{key} {after} ?"]) + ")")
    return "(" + " OR ".join(ors) + ")"


def _keyset_params(after: list[Any]) -> list[Any]:
    params: list[Any] = []
    for i in range(len(after)):
        params.extend(after[: i + 1])
    return params


def _padded(count: int) -> int:
    """``count`` ids as the next power of two (at least 4), the last repeated: a server
    prepares a few statement texts, not one per count."""
    return max(4, 1 << (count - 1).bit_length())
