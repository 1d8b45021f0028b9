"""The one SQLite connection (apsw): WAL, migrations, transactions, a lock for threads."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import apsw

from sidecar.disk import RESUME, DiskFaults, full, not_writable, refusal
from sidecar.errors import FailedPrecondition, StorageFault
from sidecar.store.contract import Dialect, Row
from sidecar.store.migrations import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger(__name__)

# A commit that leaves at least this many pages in the WAL wakes the checkpointer thread.
# (SQLite's own auto-checkpoint, same threshold, runs inside the commit that crosses it and
# charges its whole duration to whichever call that was, e.g. an Inject.)
CHECKPOINT_PAGES = 1000
# If writes outrun the thread and the WAL reaches this, the committing call checkpoints itself
# (as SQLite would), so the WAL stays bounded under sustained writes.
CHECKPOINT_INLINE_PAGES = 8 * CHECKPOINT_PAGES
# ``purge_wal``: truncating checkpoints tried, each waiting at most this long for readers.
PURGE_ATTEMPTS = 5
PURGE_BUSY_MS = 1000
# Prepared statements kept per connection (apsw's cache, by SQL text). Its default, 32, is
# fewer than the texts the store runs (one per row count of a multi-row VALUES or an IN list).
STATEMENT_CACHE = 256


class _Checkpointer:
    """PASSIVE WAL checkpoints on a connection and thread of their own, off the calls' path.

    PASSIVE never blocks the writer or readers of the main connection (WAL allows both
    during a checkpoint); apsw releases the GIL while SQLite works.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._wanted = threading.Event()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.behind = False  # the WAL reached CHECKPOINT_INLINE_PAGES

    def wal_hook(self, _conn: apsw.Connection, _name: str, pages: int) -> int:
        if pages >= CHECKPOINT_PAGES:
            with self._guard:
                if self._thread is None and not self._stopped:
                    self._thread = threading.Thread(
                        target=self._run, name="sqlite-checkpoint", daemon=True)
                    self._thread.start()
            self._wanted.set()
        self.behind = pages >= CHECKPOINT_INLINE_PAGES
        return int(apsw.SQLITE_OK)

    def _run(self) -> None:
        conn = apsw.Connection(str(self.path))
        try:
            while True:
                self._wanted.wait()
                self._wanted.clear()
                if self._stopped:
                    return
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except apsw.Error as err:
                    log.warning("wal checkpoint failed", extra={"error": str(err)})
        finally:
            conn.close()

    def stop(self) -> None:
        with self._guard:
            self._stopped = True
            thread = self._thread
        self._wanted.set()
        if thread is not None:
            thread.join()


class CorruptDatabase(OSError):
    """The database file is damaged or not a database (its header overwritten, truncated)."""

    def __init__(self, path: Path, err: apsw.Error) -> None:
        super().__init__(
            f"{path} is damaged or not a SQLite database ({err}); the sidecar will not use it. "
            "Restore the data dir from a backup, or move this file away to start with an "
            "empty store (then `memsidecar import` an export to refill it)")


# SQLite errors that may mean the disk refused a write; which one is decided by
# ``_disk_fault`` (the result code, else the errno SQLite met).
_DISK_ERRORS = (apsw.FullError, apsw.ReadOnlyError, apsw.IOError, apsw.CantOpenError,
                apsw.PermissionsError)


def _disk_fault(conn: apsw.Connection, path: Path, err: apsw.Error) -> StorageFault | None:
    """A full disk (SQLITE_FULL, ENOSPC) or an unwritable file (SQLITE_READONLY, EROFS,
    EACCES) as the domain error naming ``path``; None for any other error."""
    if isinstance(err, apsw.FullError):
        return full(path)
    if isinstance(err, apsw.ReadOnlyError):
        return not_writable(path, "SQLite cannot write it: the file or its directory is "
                            "read-only")
    try:
        code = conn.system_errno
    except apsw.Error:
        return None
    return refusal(code, path)


def _connect(path: Path) -> tuple[apsw.Connection, StorageFault | None]:
    """The database read-write (SQLite falls back to read-only by itself when the file cannot
    be written). A database whose WAL index cannot be created (a full disk, a directory that
    cannot be written) and whose WAL holds nothing is opened immutable, read-only: reads are
    served, writes refused (DiskFull, NotWritable) until ``Database.probe`` reopens it. The
    connection, and the fault that made it read-only."""
    conn = apsw.Connection(str(path), statementcachesize=STATEMENT_CACHE)
    try:
        conn.execute("PRAGMA schema_version").fetchall()  # opens the file and its WAL
        return conn, None
    except (apsw.NotADBError, apsw.CorruptError) as err:
        conn.close()
        raise CorruptDatabase(path, err) from err
    except (apsw.CantOpenError, apsw.IOError) as err:
        code = conn.system_errno
        conn.close()
        fault = refusal(code, path) or (
            None if os.access(path.parent, os.W_OK) else
            not_writable(path, "its directory is not writable"))
        if fault is None or not path.exists():
            raise
        if _wal_bytes(path):
            raise type(fault)(
                f"{fault.message.replace(RESUME, 'then start the sidecar again')} (its WAL "
                "holds commits SQLite must read through a WAL index it cannot create)",
                path=fault.path) from err
    return _immutable(path), fault


def _immutable(path: Path) -> apsw.Connection:
    return apsw.Connection(f"file:{quote(str(path))}?immutable=1",
                           flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)


def _wal_bytes(path: Path) -> int:
    try:
        return path.with_name(path.name + "-wal").stat().st_size
    except FileNotFoundError:
        return 0


def _configure(conn: apsw.Connection) -> None:
    conn.set_busy_timeout(5000)
    for pragma in (
        "PRAGMA journal_mode=WAL",  # an immutable (read-only) connection stays as it is
        "PRAGMA synchronous=NORMAL",
        "PRAGMA foreign_keys=ON",
        "PRAGMA temp_store=MEMORY",
        # Deleted content is overwritten with zeros (freed cells and pages), so an erased
        # text leaves the file once the WAL is checkpointed (``purge_wal``). Measured cost:
        # bench/results/forget_user.md.
        "PRAGMA secure_delete=ON",
    ):
        conn.execute(pragma).fetchall()


class Database:
    """A serialised apsw connection. Every public method holds the lock for its duration.

    A damaged file raises CorruptDatabase (an OSError: the command line's one-line refusal)."""

    dialect: Dialect = "sqlite"

    def __init__(self, path: Path | str, faults: DiskFaults | None = None) -> None:
        self.path = Path(path)
        self.faults = faults or DiskFaults()  # refused writes: counted, logged, for health
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn, self._read_only = _connect(self.path)
        if self._read_only is not None:
            log.warning("database opened read-only: SQLite cannot create its WAL index beside "
                        "it", extra={"path": str(self.path), "reason": self._read_only.reason})
        self._lock = threading.RLock()
        self._apart: apsw.Connection | None = None  # ``read_apart``'s, opened on first use
        self._apart_lock = threading.Lock()
        self._closed = False
        try:
            try:
                _configure(self._conn)
                self._checkpointer = _Checkpointer(self.path)
                self._migrate()
            except apsw.Error as err:
                self._raise(err)
        except BaseException:
            self._conn.close()
            raise
        # A WAL hook replaces SQLite's auto-checkpoint: checkpoints move to a thread.
        self._conn.set_wal_hook(self._checkpointer.wal_hook)

    @property
    def schema_version(self) -> int:
        return int(self.query_one("PRAGMA user_version")[0])  # type: ignore[index]

    def _migrate(self) -> None:
        current = self.schema_version
        if current > SCHEMA_VERSION:
            raise FailedPrecondition(
                f"database {self.path} has schema version {current}, newer than this "
                f"build's {SCHEMA_VERSION}; upgrade memsidecar or use another --data-dir"
            )
        for version in range(current, SCHEMA_VERSION):
            try:
                with self.transaction():
                    self._conn.execute(MIGRATIONS[version])
                    self._conn.execute(f"PRAGMA user_version={version + 1}")
            except StorageFault as fault:
                raise type(fault)(
                    f"{self.path} needs migrating to schema version {SCHEMA_VERSION}, a write: "
                    + fault.message.replace(RESUME, "then start the sidecar again"),
                    path=fault.path) from None
            log.info("schema migrated", extra={"db": str(self.path), "version": version + 1})

    def _raise(self, err: apsw.Error, record: bool = True) -> NoReturn:
        """A damaged file -> CorruptDatabase; a write the disk refused -> DiskFull or
        NotWritable (``record``: counted and logged by ``faults``); else ``err``."""
        if isinstance(err, (apsw.NotADBError, apsw.CorruptError)):
            raise CorruptDatabase(self.path, err) from err
        fault = _disk_fault(self._conn, self.path, err) if isinstance(err, _DISK_ERRORS) \
            else None
        if isinstance(err, apsw.ReadOnlyError) and self._read_only is not None:
            fault = self._read_only  # why it was opened read-only
        if fault is None:
            raise err
        raise (self.faults.refused(fault) if record else fault) from None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; rolls back on any exception. Re-entrant (savepoints).

        IMMEDIATE: the write lock is taken (waiting out the busy timeout) before the first
        read. A deferred transaction that read first would fail its first write at once
        (SQLITE_BUSY_SNAPSHOT) had another connection, such as the WAL purge, changed the
        WAL since its snapshot."""
        with self._lock:
            self._check_open()
            changes = self._conn.total_changes()
            outer = not self._conn.in_transaction and not self._conn.readonly("main")
            try:
                if outer:
                    self._conn.execute("BEGIN IMMEDIATE")
                try:
                    if outer:  # ROLLBACK undoes it all: no savepoint needed
                        yield
                        self._conn.execute("COMMIT")
                    else:
                        with self._conn:  # a savepoint
                            yield
                except BaseException:
                    if outer and self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except apsw.Error as err:
                self._raise(err)
            if not self._conn.in_transaction:
                self._committed(changes)

    def _committed(self, changes_before: int) -> None:
        """After a commit: writes work again if it changed rows; the WAL checkpointed here
        when the checkpointer fell behind (a failure leaves it to the checkpointer)."""
        if self.faults.current is not None and self._conn.total_changes() != changes_before:
            self.faults.accepted()
        if self._checkpointer.behind and not self._conn.in_transaction:
            self._checkpointer.behind = False
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except apsw.Error as err:
                log.warning("wal checkpoint failed", extra={"error": str(err)})

    def probe(self) -> None:
        """A write that changes nothing (the schema version, rewritten): raises DiskFull or
        NotWritable, uncounted, while the disk refuses writes."""
        with self._lock:
            self._check_open()
            if self._conn.readonly("main"):
                self._reopen()
            version = self.schema_version
            try:
                with self._conn:
                    self._conn.execute(f"PRAGMA user_version={version}")
            except apsw.Error as err:
                self._raise(err, record=False)

    def _reopen(self) -> None:
        """The connection was opened read-only (its disk was): open it again read-write, or
        NotWritable while that is still impossible."""
        if not os.access(self.path.parent, os.W_OK):
            raise not_writable(self.path, "its directory is not writable")
        # Closed first: SQLite shares one read-only handle of the file among the process's
        # connections while any of them is open.
        self._conn.close()
        try:
            self._conn, self._read_only = _connect(self.path)
        except BaseException:
            self._conn = _immutable(self.path)  # reads go on
            raise
        _configure(self._conn)
        self._conn.set_wal_hook(self._checkpointer.wal_hook)
        if self._read_only is not None:
            raise self._read_only
        if self._conn.readonly("main"):
            raise not_writable(self.path, "SQLite can only open it read-only")
        log.info("database reopened read-write", extra={"path": str(self.path)})

    def batched(self) -> AbstractContextManager[None]:
        return self.transaction()  # in-process: nothing to batch

    def purge_wal(self) -> bool:
        """Copy every WAL frame into the database file and truncate the WAL to zero bytes,
        so no earlier version of a page (an erased text) stays in it. Runs on a connection of
        its own: this one keeps serving; SQLite holds its writers only while the frames are
        copied (a PASSIVE pass first leaves little to copy). False when readers kept the WAL
        busy through every attempt (the checkpointer empties it later)."""
        self._check_open()
        conn = apsw.Connection(str(self.path))
        try:
            conn.set_busy_timeout(PURGE_BUSY_MS)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            for _ in range(PURGE_ATTEMPTS):
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0][0]
                if not busy:
                    return True
            log.warning("wal not truncated: readers kept it busy")
            return False
        except apsw.Error as err:
            self._raise(err)
        finally:
            conn.close()

    def guard(self, sql: str, params: tuple[Any, ...] | dict[str, Any],
              error: Exception) -> None:
        with self._lock:
            self.execute(sql, params)
            if self._conn.changes() == 0:
                raise error

    def check(self, condition: str, params: tuple[Any, ...] | dict[str, Any],
              error: Exception) -> None:
        rows = self.execute(f"SELECT {condition}", params)
        if not rows or not rows[0][0]:
            raise error

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[Row]:
        with self._lock:
            self._check_open()
            changes = self._conn.total_changes()
            try:
                rows = list(self._conn.execute(sql, params))
            except apsw.Error as err:
                self._raise(err)
            if self.faults.current is not None and not self._conn.in_transaction:
                self._committed(changes)  # a statement of its own, committed
            return rows

    def read_apart(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        """A read on a connection of its own: it sees what is committed and never waits
        for a write transaction of this process (a scope loaded for a search while a write
        gate, inside its transaction, waits for that load)."""
        if self._read_only is not None:
            return self.execute(sql, params)
        with self._apart_lock:
            self._check_open()
            if self._apart is None:
                self._apart = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
                self._apart.set_busy_timeout(5000)
            try:
                return list(self._apart.execute(sql, params))
            except apsw.Error as err:
                self._raise(err, record=False)

    def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with self._lock:
            self._check_open()
            changes = self._conn.total_changes()
            try:
                self._conn.executemany(sql, rows)
            except apsw.Error as err:
                self._raise(err)
            if self.faults.current is not None and not self._conn.in_transaction:
                self._committed(changes)

    def query_one(self, sql: str, params: tuple[Any, ...] = ()) -> Row | None:
        rows = self.execute(sql, params)
        return rows[0] if rows else None

    def read_together(self, reads: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Row]]:
        """One after another under the connection's lock: this process's writes (the only
        ones, on the one connection that writes) wait for all of them."""
        with self._lock:
            return [self.execute(sql, params) for sql, params in reads]

    def changes(self) -> int:
        with self._lock:
            return int(self._conn.changes())

    def size_bytes(self) -> int:
        row = self.query_one(
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
        )
        return int(row[0]) if row else 0

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._checkpointer.stop()
            with self._apart_lock:
                if self._apart is not None:
                    self._apart.close()
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except _DISK_ERRORS as err:  # the WAL keeps every commit; the next start has it
                if _disk_fault(self._conn, self.path, err) is None:
                    raise
                log.warning("wal not checkpointed at close: the disk refuses writes",
                            extra={"path": str(self.path), "error": str(err)})
            finally:
                self._conn.close()

    def _check_open(self) -> None:
        if self._closed:
            raise FailedPrecondition("the database is closed (the sidecar is shutting down)")
