"""A batch's statements as EXECUTEs of statements each pooled connection prepared once.

A batch (``PgDatabase.batched``) is one simple-protocol query string, and the server parses,
analyses and plans every statement in it, every time. Here a statement text with parameters
is sent as ``EXECUTE name(literal, ...)`` (the literals still bound client-side by psycopg's
escaping) of a statement the connection prepared (``PREPARE name AS`` the text with ``$n``
parameters, of the types the server infers from their places). The batch runs with
``plan_cache_mode = force_generic_plan`` (``SET LOCAL``: its statements only): a prepared
statement is planned once, not on each of its first five runs.

Texts a connection has not prepared are prepared in a round trip of their own before the
batch (a connection's first turns; a statement prepared inside the batch's string would keep
a copy of that whole string, literals and all, for as long as it lives). Each connection
keeps at most ``size`` texts (the multi-row ``VALUES`` of a turn's rows differ by their row
count); the least recently used are deallocated in that round trip. Names are never reused
anywhere (a random part for each store object); a connection the pool replaces is a new
object, with none.

A text the server cannot prepare is sent plainly from then on. A batch of EXECUTEs that fails
otherwise than by a ``guard`` is sent again as plain statements (nothing of the first try was
committed: one string is one transaction), so its error is the one it always had. A server
that forgets prepared statements (a transaction pooler between) turns preparing off.
"""

from __future__ import annotations

import itertools
import logging
import secrets
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


@dataclass(frozen=True, slots=True)
class Composed:
    """A batch's query string; whether it executes prepared statements."""

    text: bytes
    executes: bool = False


class PreparedStatements:
    """The prepared texts of a pool's connections (used under the store's lock)."""

    def __init__(self, size: int = PER_CONNECTION) -> None:
        self.size = size
        # Names unique to this store object, never reused: an EXECUTE that reaches a session
        # other than its connection's (a pooler between) finds its own text or none.
        self._prefix = f"{PREFIX}{secrets.token_hex(4)}_"
        self._made = itertools.count()
        self._sessions: weakref.WeakKeyDictionary[psycopg.Connection[Any], _Session] = (
            weakref.WeakKeyDictionary())
        self._unpreparable: set[str] = set()
        self.preparations = 0  # round trips that prepared texts
        self.resent = 0  # batches of EXECUTEs sent again plainly

    def prepared(self, conn: psycopg.Connection[Any]) -> dict[str, str]:
        """The texts ``conn`` holds prepared, by name."""
        session = self._sessions.get(conn)
        return {} if session is None else {name: sql for sql, name in session.names.items()}

    def compose(self, conn: psycopg.Connection[Any], statements: Sequence[Statement]) -> Composed:
        """The batch as one query string, the statements ``conn`` holds prepared (having
        prepared the ones it lacked) as EXECUTEs."""
        names = self._prepare(conn, statements)
        if not names:
            return Composed(plain(psycopg.ClientCursor(conn), statements))
        literal = Transformer.from_context(conn).as_literal  # psycopg's escaping, as mogrify's
        bind = psycopg.ClientCursor(conn)
        body = [b"EXECUTE %s(%s)" % (names[sql].encode(), b", ".join(
                    b"NULL" if value is None else literal(value) for value in params))
                if sql in names and params else _plain_one(bind, sql, params).encode()
                for sql, params in statements]
        return Composed(b"\n;\n".join([GENERIC, *body]), executes=True)

    def failed(self, conn: psycopg.Connection[Any], err: psycopg.Error) -> None:
        """A batch of EXECUTEs failed with ``err`` (not a guard's refusal, not a lost
        connection); it is sent again plainly."""
        self.resent += 1
        log.info("batch refused as EXECUTEs: sent again plainly",
                 extra={"sqlstate": err.sqlstate})
        if isinstance(err, psycopg.errors.InvalidSqlStatementName):
            self._turn_off(conn, err)

    def _prepare(self, conn: psycopg.Connection[Any],
                 statements: Sequence[Statement]) -> dict[str, str]:
        """Prepare on ``conn`` the texts of ``statements`` it lacks, in one round trip (none
        when it holds them all); the batch's texts ``conn`` holds, by text."""
        wanted = list(dict.fromkeys(sql for sql, params in statements
                                    if self._preparable(sql, params)))
        if not wanted or self.size <= 0:
            return {}
        session = self._sessions.setdefault(conn, _Session())
        names = session.names
        held = [sql for sql in wanted if sql in names]
        for sql in held:
            names.move_to_end(sql)
        fresh = [sql for sql in wanted if sql not in names][:max(0, self.size - len(held))]
        if fresh:
            before = names.copy()
            for sql in fresh:
                names[sql] = f"{self._prefix}{next(self._made)}"
            head = []
            while len(names) > self.size:  # the batch's texts are last: never evicted here
                head.append(f"DEALLOCATE {names.popitem(last=False)[1]}")
            head += [f"PREPARE {names[sql]} AS {_numbered(sql)}" for sql in fresh]
            self.preparations += 1
            try:
                conn.execute("\n;\n".join(head).encode(), prepare=False)
            except psycopg.OperationalError:
                self._sessions.pop(conn, None)  # the pool drops a broken connection
                raise
            except psycopg.Error as err:
                if isinstance(err, psycopg.errors.InvalidSqlStatementName):
                    self._turn_off(conn, err)
                    return {}
                self._refused(conn, session, before, fresh)
        return {sql: session.names[sql] for sql in wanted if sql in session.names}

    def _refused(self, conn: psycopg.Connection[Any], session: _Session,
                 before: OrderedDict[str, str], fresh: list[str]) -> None:
        """A PREPARE failed: what the server holds is read back; the first new text it
        lacks is the one it refused (the statements of a string run in order)."""
        there = self._on_server(conn)
        known = before | session.names
        session.names = OrderedDict((sql, name) for sql, name in known.items() if name in there)
        for name in there - set(session.names.values()):
            conn.execute(f"DEALLOCATE {name}".encode(), prepare=False)
        refused = next((sql for sql in fresh if sql not in session.names), None)
        if refused is not None:
            if len(self._unpreparable) >= UNPREPARABLE_KEPT:
                self._unpreparable.clear()
            self._unpreparable.add(refused)
            log.info("a statement the server cannot prepare: sent plainly",
                     extra={"statement": refused[:60]})

    def _turn_off(self, conn: psycopg.Connection[Any], err: psycopg.Error) -> None:
        log.warning("the server forgot prepared statements (a transaction pooler?): "
                    "batches are sent unprepared", extra={"sqlstate": err.sqlstate})
        self.size = 0
        self._sessions.pop(conn, None)
        for name in self._on_server(conn):
            conn.execute(f"DEALLOCATE {name}".encode(), prepare=False)

    def _on_server(self, conn: psycopg.Connection[Any]) -> set[str]:
        rows = conn.execute("SELECT name FROM pg_prepared_statements WHERE "
                            "starts_with(name, %s)", (self._prefix,)).fetchall()
        return {str(row[0]) for row in rows}

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
