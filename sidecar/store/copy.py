"""Copy a whole store between backends (``memsidecar migrate``): memories with their
history, edges, the embedding model's record, channel state, ownership and captured turns,
and the admin page's dismissed suggestions.

Into an empty target every row keeps its keys (``seq`` included); with ``append`` the target
keeps what it has: memories whose id it already holds are skipped (with their history), the
rest get new seqs, and channels it already knows keep their state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sidecar.errors import FailedPrecondition
from sidecar.store.contract import Row, SqlStore
from sidecar.store.model_repo import MODEL_KEY

BATCH = 1000
Progress = Callable[[str, int, int], None]  # (table, rows copied, rows in the source)


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[str, ...]
    key: str  # a unique column to read the rows in pages by; "": read in one go
    owner: str  # the column naming what a row belongs to (memory id or channel id)


MEMORY_COLUMNS = ("id", "content", "type", "importance", "created_at", "updated_at",
                  "last_accessed_at", "access_count", "source", "channel_id", "agent_id",
                  "forgotten", "version", "tier", "topic_id", "user_id", "channel_private",
                  "embedding")
MEMORIES = Table("memories", ("seq", *MEMORY_COLUMNS), "seq", "id")
VERSIONS = Table("memory_versions", (
    "seq", "memory_id", "version", "event", "recorded_at", "actor", "content", "type",
    "importance", "source", "channel_id", "agent_id", "forgotten", "tier", "topic_id",
    "user_id", "channel_private"),
    "seq", "memory_id")
EDGES = Table("edges", ("source_id", "target_id", "relation", "weight", "created_at"),
              "", "source_id")
CHANNELS = Table("injection_channels", ("channel_id", "turn"), "channel_id", "channel_id")
CHANNEL_TABLES = (
    CHANNELS,
    Table("injection_ids", ("channel_id", "memory_id", "turn", "version", "injected_at"),
          "", "channel_id"),
    Table("injection_buffer", ("seq", "channel_id", "memory_id", "turn", "embedding"),
          "seq", "channel_id"),
    Table("injection_blocks", ("channel_id", "turn", "digest"), "", "channel_id"),
    Table("injection_replies", ("channel_id", "keep", "reply"), "channel_id", "channel_id"),
    Table("injection_context", ("channel_id", "turn", "text", "embedding", "reply", "votes",
                                "reply_votes", "speaker"), "", "channel_id"),
    Table("channel_owners", ("channel_id", "agent_id", "last_used_us"), "channel_id",
          "channel_id"),
    Table("channel_speakers", ("channel_id", "user_id"), "", "channel_id"),
    Table("captures", ("channel_id", "key", "agent_id", "role", "turn", "content", "context",
                       "at_us", "memory_id", "embedding", "outcome", "held", "user_id"), "",
          "channel_id"),
)
DISMISSED = Table("admin_dismissed", ("key", "dismissed_us"), "key", "key")
SEQUENCED = ("memories", "memory_versions", "injection_buffer")


def copy_store(source: SqlStore, target: SqlStore, *, append: bool,
               progress: Progress) -> dict[str, int]:
    """Rows written per table."""
    _check_target(source, target, append)
    written: dict[str, int] = {}
    skip = _ids(target, MEMORIES) if append else set()
    written["memories"] = _copy(source, target, MEMORIES, append, skip, progress)
    written["memory_versions"] = _copy(source, target, VERSIONS, append, skip, progress)
    written["edges"] = _copy(source, target, EDGES, append, set(), progress)
    known = _ids(target, CHANNELS) if append else set()
    for table in CHANNEL_TABLES:
        written[table.name] = _copy(source, target, table, append, known, progress)
    written[DISMISSED.name] = _copy(source, target, DISMISSED, append, set(), progress)
    model = source.query_one("SELECT value FROM meta WHERE key = ?", (MODEL_KEY,))
    if model is not None:
        target.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO "
                       "UPDATE SET value = excluded.value", (MODEL_KEY, model[0]))
    if target.dialect == "postgres" and not append:
        for name in SEQUENCED:  # identities continue after the copied seqs
            target.execute(f"SELECT setval(pg_get_serial_sequence('{name}', 'seq'), "
                           f"(SELECT coalesce(max(seq), 0) + 1 FROM {name}), false)")
    return written


def _check_target(source: SqlStore, target: SqlStore, append: bool) -> None:
    rows = target.query_one("SELECT (SELECT count(*) FROM memories), "
                            "(SELECT count(*) FROM injection_channels)")
    assert rows is not None
    if not append and (rows[0] or rows[1]):
        raise FailedPrecondition(
            f"the target already holds {rows[0]} memories and {rows[1]} channels; migrate "
            "into an empty store, or pass --append to add to it")
    theirs = target.query_one("SELECT value FROM meta WHERE key = ?", (MODEL_KEY,))
    ours = source.query_one("SELECT value FROM meta WHERE key = ?", (MODEL_KEY,))
    if append and rows[0] and theirs and ours and theirs != ours:
        raise FailedPrecondition(
            "the target's memories were embedded by another model; append to a store of "
            f"the same model (source: {ours[0]}, target: {theirs[0]})")


def _ids(db: SqlStore, table: Table) -> set[str]:
    return {str(r[0]) for r in db.execute(f"SELECT {table.owner} FROM {table.name}")}


def _copy(source: SqlStore, target: SqlStore, table: Table, append: bool, skip: set[str],
          progress: Progress) -> int:
    total_row = source.query_one(f"SELECT count(*) FROM {table.name}")
    total = int(total_row[0]) if total_row else 0
    columns = tuple(c for c in table.columns if not (append and c == "seq"))
    insert = (f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES "
              f"({','.join('?' * len(columns))}) ON CONFLICT DO NOTHING")
    owner = table.columns.index(table.owner)
    read, written, after = 0, 0, None
    while read < total:
        rows = _page(source, table, after)
        if not rows:
            break
        read += len(rows)
        after = rows[-1][table.columns.index(table.key)] if table.key else None
        keep = [_pick(r, table.columns, columns) for r in rows if str(r[owner]) not in skip]
        if keep:
            with target.transaction():
                target.executemany(insert, keep)
        written += len(keep)
        progress(table.name, read, total)
        if not table.key:
            break
    return written


def _page(source: SqlStore, table: Table, after: object) -> list[Row]:
    if not table.key:
        return source.execute(f"SELECT {', '.join(table.columns)} FROM {table.name}")
    where = "" if after is None else f" WHERE {table.key} > ?"
    sql = (f"SELECT {', '.join(table.columns)} FROM {table.name}{where} "
           f"ORDER BY {table.key} LIMIT {BATCH}")
    return source.execute(sql, () if after is None else (after,))


def _pick(row: Row, have: tuple[str, ...], want: tuple[str, ...]) -> tuple[object, ...]:
    return row if have == want else tuple(row[have.index(c)] for c in want)
