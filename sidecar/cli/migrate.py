"""``memsidecar migrate --from SPEC --to SPEC [--append]``: copy a store between backends.

SPEC: ``sqlite:PATH`` (a data dir or its database file) or ``postgres:DSN``; ``postgres:``
alone takes the DSN from MEMSIDECAR_STORE_DSN, so a password need not appear in the process
list. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from sidecar.cli.args import add_log_level

if TYPE_CHECKING:
    from sidecar.store.contract import SqlStore

DB_FILE = "memsidecar.sqlite3"


def add(migrate: argparse.ArgumentParser) -> None:
    migrate.add_argument("--from", dest="source", required=True,
                         help="sqlite:PATH (data dir or file) or postgres:DSN")
    migrate.add_argument("--to", dest="target", required=True,
                         help="sqlite:PATH or postgres:DSN ('postgres:' alone: "
                              "MEMSIDECAR_STORE_DSN)")
    migrate.add_argument("--append", action="store_true",
                         help="add to a target that already holds memories")
    add_log_level(migrate)
    migrate.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sidecar.store.copy import copy_store

    with ExitStack() as stack:
        source = _open(args.source, stack, lock=False)
        target = _open(args.target, stack, lock=True)
        written = copy_store(source, target, append=args.append, progress=_progress)
    print(" ".join(f"{table}={count}" for table, count in written.items()), file=sys.stderr)
    return 0


def _open(spec: str, stack: ExitStack, lock: bool) -> SqlStore:
    from sidecar.errors import InvalidArgument
    from sidecar.store.db import Database
    from sidecar.store.lock import DataDirLock

    kind, _, rest = spec.partition(":")
    if kind == "postgres":
        from sidecar.store.postgres.db import PgDatabase
        from sidecar.store.postgres.dsn import resolve

        pg = PgDatabase(resolve(rest))
        stack.callback(pg.close)
        return pg
    if kind == "sqlite" and rest:
        path = Path(rest)
        folder, file = (path, path / DB_FILE) if path.is_dir() or not path.suffix else (
            path.parent, path)
        if lock:  # no server may write the target meanwhile
            folder.mkdir(parents=True, exist_ok=True)
            stack.callback(DataDirLock(folder).release)
        elif not file.exists():
            raise InvalidArgument(f"no SQLite store at {file.resolve()}")
        db = Database(file)
        stack.callback(db.close)
        return db
    raise InvalidArgument(f"{spec.split(':')[0]!r} is not a store: use sqlite:PATH or "
                          "postgres:DSN (postgres: alone reads MEMSIDECAR_STORE_DSN)")


def _progress(table: str, done: int, total: int) -> None:
    print(f"{table}: {done}/{total}", file=sys.stderr)
