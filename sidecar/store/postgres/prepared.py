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

An EXECUTE's literals are coerced to the parameter types the server inferred, which a plain
statement's literals are not (``n = 1.5`` on a ``bigint`` matches no row, ``n = $1`` at 1.5
matches 2; ``t = 42`` on a ``text`` is an error, ``t = $1`` at 42 is not): a statement is sent
as an EXECUTE only when each value is a string, a NULL, or of a Python type that the inferred
type takes as it is (``ACCEPTS``; read back with the preparation), else plainly.

A text the server cannot prepare is sent plainly from then on. A batch of EXECUTEs that fails
otherwise than by a ``guard`` is sent again as plain statements (nothing of the first try was
committed: one string is one transaction), so its error is the one it always had.

A connection whose statements the server forgot (psycopg sends ``DEALLOCATE ALL`` when a
transaction rolls back on a connection holding statements it prepared itself, its reads run
five times) prepares them again. When the server forgets them again before a batch of
EXECUTEs went through on that connection (a transaction pooler between: each round trip may
reach another session), preparing is turned off for the store.
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
FORGOTTEN_MAX = 2  # a connection's statements forgotten this often in a row: preparing off
UNPREPARABLE_KEPT = 256  # texts remembered as never to prepare (then forgotten, tried again)
FITS_KEPT = 1024  # (text, value types) checks a connection remembers
GENERIC = b"SET LOCAL plan_cache_mode = force_generic_plan"

Statement = tuple[str, Params]

# The Python types (besides str and None, whose literals take the type of their place in
# a plain statement too) whose literal means the same as an EXECUTE's argument of an inferred
# parameter type as in a plain statement. A value of another type: the statement sent plainly.
_INTS: frozenset[type] = frozenset({int})
ACCEPTS: dict[str, frozenset[type]] = {
    "boolean": frozenset({bool}), "smallint": _INTS, "integer": _INTS, "bigint": _INTS,
    "double precision": frozenset({int, float}),
    "bytea": frozenset({bytes, bytearray, memoryview}),
}
_ANY: frozenset[type] = frozenset({str, type(None)})
Kinds = tuple[frozenset[type], ...]  # per parameter, the Python types sent as an EXECUTE


@dataclass(slots=True)
class _Session:
    """What one connection has prepared: text -> name, least recently used first; text ->
    the Python types each parameter takes."""

    names: OrderedDict[str, str] = field(default_factory=OrderedDict)
    kinds: dict[str, Kinds] = field(default_factory=dict)
    # (text, its values' Python types) -> whether ``kinds`` takes them: the check of a
    # multi-row VALUES' hundred values is one lookup
    fits: dict[tuple[str, tuple[type, ...]], bool] = field(default_factory=dict)

    def takes(self, sql: str, params: Params) -> bool:
        """Whether each value of ``params`` is of a type its parameter of ``sql`` takes."""
        key = (sql, tuple(map(type, params)))
        fit = self.fits.get(key)
        if fit is None:
            fit = _takes(self.kinds.get(sql, ()), params)
            if len(self.fits) >= FITS_KEPT:
                self.fits.clear()
            self.fits[key] = fit
        return fit


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
        # per connection, times the server forgot its statements since a batch went through
        self._forgotten: weakref.WeakKeyDictionary[psycopg.Connection[Any], int] = (
            weakref.WeakKeyDictionary())

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
        session = self._sessions[conn]
        literal = Transformer.from_context(conn).as_literal  # psycopg's escaping, as mogrify's
        bind = psycopg.ClientCursor(conn)
        body = [b"EXECUTE %s(%s)" % (names[sql].encode(), b", ".join(
                    b"NULL" if value is None else literal(value) for value in params))
                if sql in names and params and session.takes(sql, params)
                else _plain_one(bind, sql, params).encode()
                for sql, params in statements]
        return Composed(b"\n;\n".join([GENERIC, *body]), executes=True)

    def failed(self, conn: psycopg.Connection[Any], err: psycopg.Error) -> None:
        """A batch of EXECUTEs failed with ``err`` (not a guard's refusal, not a lost
        connection); it is sent again plainly."""
        self.resent += 1
        log.info("batch refused as EXECUTEs: sent again plainly",
                 extra={"sqlstate": err.sqlstate})
        if isinstance(err, psycopg.errors.InvalidSqlStatementName):
            self._forgot(conn, err)

    def went_through(self, conn: psycopg.Connection[Any]) -> None:
        """A batch of EXECUTEs was committed on ``conn``: its server keeps what it is told."""
        self._forgotten.pop(conn, None)

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
                evicted, name = names.popitem(last=False)
                session.kinds.pop(evicted, None)
                session.fits.clear()
                head.append(f"DEALLOCATE {name}")
            head += [f"PREPARE {names[sql]} AS {_numbered(sql)}" for sql in fresh]
            head.append(_TYPES % ", ".join(f"'{names[sql]}'" for sql in fresh))
            self.preparations += 1
            try:
                cur = conn.execute("\n;\n".join(head).encode(), prepare=False)
                while cur.nextset():  # to the last result: the parameter types
                    pass
                self._learn(session, dict(cur.fetchall()))
            except psycopg.OperationalError:
                self._sessions.pop(conn, None)  # the pool drops a broken connection
                raise
            except psycopg.Error as err:
                if isinstance(err, psycopg.errors.InvalidSqlStatementName):
                    self._forgot(conn, err)  # an evicted text's DEALLOCATE
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
        session.kinds = {sql: kinds for sql, kinds in session.kinds.items()
                         if sql in session.names}
        self._learn(session, there)
        for name in set(there) - set(session.names.values()):
            conn.execute(f"DEALLOCATE {name}".encode(), prepare=False)
        refused = next((sql for sql in fresh if sql not in session.names), None)
        if refused is not None:
            if len(self._unpreparable) >= UNPREPARABLE_KEPT:
                self._unpreparable.clear()
            self._unpreparable.add(refused)
            log.info("a statement the server cannot prepare: sent plainly",
                     extra={"statement": refused[:60]})

    def _forgot(self, conn: psycopg.Connection[Any], err: psycopg.Error) -> None:
        """The server lacked a statement ``conn`` prepared: what it still holds of this store
        is deallocated and ``conn`` prepares again; the second time in a row before a batch of
        EXECUTEs went through on it, preparing is turned off."""
        self._forgotten[conn] = forgotten = self._forgotten.get(conn, 0) + 1
        if forgotten >= FORGOTTEN_MAX:
            log.warning("the server forgot prepared statements (a transaction pooler?): "
                        "batches are sent unprepared", extra={"sqlstate": err.sqlstate})
            self.size = 0
        else:
            log.info("the server forgot prepared statements: prepared again",
                     extra={"sqlstate": err.sqlstate})
        self._sessions.pop(conn, None)
        for name in self._on_server(conn):
            conn.execute(f"DEALLOCATE {name}".encode(), prepare=False)

    def _on_server(self, conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
        """This store's statements ``conn`` holds: name -> parameter types."""
        rows = conn.execute("SELECT name, parameter_types::text[] FROM pg_prepared_statements "
                            "WHERE starts_with(name, %s)", (self._prefix,)).fetchall()
        return {str(name): list(types) for name, types in rows}

    @staticmethod
    def _learn(session: _Session, types: dict[str, list[str]]) -> None:
        """The Python types each parameter takes, of the texts prepared as ``types`` (name ->
        the server's parameter types) says."""
        by_name = {name: sql for sql, name in session.names.items()}
        session.fits.clear()
        for name, kinds in types.items():
            if name in by_name:
                session.kinds[by_name[name]] = tuple(ACCEPTS.get(kind, frozenset()) | _ANY
                                                     for kind in kinds)

    def _preparable(self, sql: str, params: Params) -> bool:
        return (isinstance(params, tuple) and len(params) > 0
                and sql.count("?") == len(params) and sql not in self._unpreparable)


_TYPES = ("SELECT name, parameter_types::text[] FROM pg_prepared_statements "
          "WHERE name IN (%s)")


def _takes(kinds: Kinds, params: Params) -> bool:
    """Whether each of ``params`` is of a type its parameter takes as an EXECUTE's argument."""
    return len(kinds) == len(params) and all(
        type(value) in kind for value, kind in zip(params, kinds, strict=True))


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
