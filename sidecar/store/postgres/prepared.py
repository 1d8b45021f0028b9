"""A batch's statements as EXECUTEs of statements each pooled connection prepared once.

A batch (``PgDatabase.batched``) is one simple-protocol query string, and the server parses,
analyses and plans every statement in it, every time. Here a statement text with parameters
is sent as ``EXECUTE name(literal, ...)`` (the literals still bound client-side by psycopg's
escaping) of a statement the connection prepared (``PREPARE name AS`` the text with ``$n``
parameters, of the types the server infers from their places). A text the connection has not
prepared is prepared in the same string, ahead of the statements: still one round trip. The
batch runs with ``plan_cache_mode = force_generic_plan`` (``SET LOCAL``: its statements only):
a prepared statement is planned once, not on each of its first five runs.

Each connection keeps at most ``size`` prepared texts (the multi-row ``VALUES`` of a turn's
rows differ by their row count); the least recently used are deallocated in the string that
prepares new ones. Names are never reused on a connection. A connection the pool replaces is
a new object with none. A batch that fails otherwise than by a ``guard`` is asked about: the
connection's prepared statements are read back from the server and the batch is sent again
as plain statements (nothing of the first try was committed: one string is one transaction);
a text prepared by a batch that only went through plainly is never prepared again. A server
that forgets prepared statements (a transaction pooler between) turns preparing off.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.adapt import Transformer

from sidecar.store.contract import Params

log = logging.getLogger(__name__)

PREFIX = "memsidecar_"  # psycopg names its own prepared statements _pg3_N
PER_CONNECTION = 64  # prepared texts a connection keeps (a turn's commit uses about 10)
UNPREPARABLE_KEPT = 256  # texts remembered as never to prepare (then forgotten, tried again)
GENERIC = b"SET LOCAL plan_cache_mode = force_generic_plan"

Statement = tuple[str, Params]


@dataclass(slots=True)
class _Session:
    """What one connection has prepared: text -> name, least recently used first."""

    names: OrderedDict[str, str] = field(default_factory=OrderedDict)
    made: int = 0  # names given on this connection


@dataclass(frozen=True, slots=True)
class Composed:
    """A batch's query string and what the connection holds once its head has run."""

    text: bytes
    names: OrderedDict[str, str] | None = None  # None: nothing prepared or executed
    fresh: tuple[str, ...] = ()  # texts this string prepares


class PreparedStatements:
    """The prepared texts of a pool's connections (used under the store's lock)."""

    def __init__(self, size: int = PER_CONNECTION) -> None:
        self.size = size
        self._sessions: weakref.WeakKeyDictionary[psycopg.Connection[Any], _Session] = (
            weakref.WeakKeyDictionary())
        self._unpreparable: set[str] = set()

    def prepared(self, conn: psycopg.Connection[Any]) -> dict[str, str]:
        """The texts ``conn`` holds prepared, by name."""
        session = self._sessions.get(conn)
        return {} if session is None else {name: sql for sql, name in session.names.items()}

    def compose(self, conn: psycopg.Connection[Any], statements: Sequence[Statement]) -> Composed:
        """The batch as one query string: its deallocations and preparations, then its
        statements, the ones with parameters as EXECUTEs."""
        wanted = [sql for sql in dict.fromkeys(sql for sql, params in statements
                                               if self._preparable(sql, params))]
        if not wanted or self.size <= 0:
            return Composed(plain(psycopg.ClientCursor(conn), statements))
        session = self._sessions.setdefault(conn, _Session())
        names = session.names.copy()
        held = [sql for sql in wanted if sql in names]
        for sql in held:
            names.move_to_end(sql)
        fresh = [sql for sql in wanted if sql not in names][:max(0, self.size - len(held))]
        for sql in fresh:
            names[sql] = f"{PREFIX}{session.made}"
            session.made += 1
        head = []
        while len(names) > self.size:  # the batch's own texts are last: never evicted here
            head.append(f"DEALLOCATE {names.popitem(last=False)[1]}".encode())
        head += [f"PREPARE {names[sql]} AS {_numbered(sql)}".encode() for sql in fresh]
        head.append(GENERIC)
        literal = Transformer.from_context(conn).as_literal  # psycopg's escaping, as mogrify's
        bind = psycopg.ClientCursor(conn)
        body = [b"EXECUTE %s(%s)" % (names[sql].encode(), b", ".join(
                    b"NULL" if value is None else literal(value) for value in params))
                if sql in names else _plain_one(bind, sql, params).encode()
                for sql, params in statements]
        return Composed(b"\n;\n".join(head + body), names, tuple(fresh))

    def sent(self, conn: psycopg.Connection[Any], composed: Composed) -> None:
        """``composed`` ran (or stopped at a guard: its head had run)."""
        if composed.names is not None:
            self._sessions.setdefault(conn, _Session()).names = composed.names

    def failed(self, conn: psycopg.Connection[Any], composed: Composed,
               err: psycopg.Error) -> bool:
        """``composed`` failed with ``err`` (not a guard): whether to send it again plainly.
        The connection's prepared statements are read back from the server."""
        if composed.names is None:
            return False
        if isinstance(err, psycopg.OperationalError):
            self._sessions.pop(conn, None)  # the pool drops a broken connection
            return False
        if isinstance(err, psycopg.errors.InvalidSqlStatementName) and self.size > 0:
            log.warning("the server forgot prepared statements (a transaction pooler?): "
                        "batches are sent unprepared", extra={"sqlstate": err.sqlstate})
            self.size = 0
        try:
            rows = conn.execute("SELECT name FROM pg_prepared_statements WHERE "
                                "starts_with(name, %s)", (PREFIX,)).fetchall()
        except psycopg.Error:
            self._sessions.pop(conn, None)
            return False
        there = {str(row[0]) for row in rows}
        session = self._sessions.setdefault(conn, _Session())
        session.names = OrderedDict((sql, name) for sql, name in composed.names.items()
                                    if name in there and self.size > 0)
        for name in there - set(session.names.values()):  # evicted, or preparing turned off
            conn.execute(f"DEALLOCATE {name}".encode(), prepare=False)
        return True

    def resent(self, composed: Composed) -> None:
        """``composed`` failed and went through plainly: its new texts are not prepared
        again (one of them could not be, or its literals do not fit the inferred types)."""
        if len(self._unpreparable) + len(composed.fresh) > UNPREPARABLE_KEPT:
            self._unpreparable.clear()
        self._unpreparable.update(composed.fresh)
        log.info("batch sent again unprepared", extra={"fresh": len(composed.fresh)})

    def _preparable(self, sql: str, params: Params) -> bool:
        return (isinstance(params, tuple) and len(params) > 0
                and sql.count("?") == len(params) and sql not in self._unpreparable)


def plain(bind: psycopg.ClientCursor[Any], statements: Sequence[Statement]) -> bytes:
    """The statements as one query string, parameters bound client-side."""
    return "\n;\n".join(_plain_one(bind, sql, params) for sql, params in statements).encode()


def _plain_one(bind: psycopg.ClientCursor[Any], sql: str, params: Params) -> str:
    return bind.mogrify(psycopg_sql(sql), params) if params else sql


@lru_cache(maxsize=1024)
def psycopg_sql(sql: str) -> bytes:
    """The contract's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s").encode()


@lru_cache(maxsize=1024)
def _numbered(sql: str) -> str:
    """The contract's ``?`` placeholders as ``$1``, ``$2``, ..."""
    parts = sql.split("?")
    return "".join(part + (f"${n + 1}" if n < len(parts) - 1 else "")
                   for n, part in enumerate(parts))


