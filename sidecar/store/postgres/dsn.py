"""Where the PostgreSQL store is: the DSN from the environment or the config, never logged.

``MEMSIDECAR_STORE_DSN`` overrides ``[store] dsn`` so a password need not be written in the
file. Messages name the store by ``describe`` (host, port, database, user: no password) and
pass through ``scrub`` (any password that reached an error text is cut out).
"""

from __future__ import annotations

import os

from psycopg.conninfo import conninfo_to_dict

from sidecar.errors import FailedPrecondition

DSN_ENV = "MEMSIDECAR_STORE_DSN"


def resolve(configured: str) -> str:
    """The DSN to use: the environment variable when set, else ``configured``."""
    dsn = os.environ.get(DSN_ENV, "") or configured
    if not dsn:
        raise FailedPrecondition(
            f'[store] backend = "postgres" needs a DSN: set {DSN_ENV} (keeps the password out '
            'of files and process lists) or [store] dsn = "postgresql://user@host/db"')
    _parse(dsn)
    return dsn


def describe(dsn: str) -> str:
    """``postgresql://user@host:port/dbname`` without the password (for logs and errors)."""
    parts = _parse(dsn)
    user = parts.get("user", "")
    host = parts.get("host", "") or "localhost"
    port = parts.get("port", "") or "5432"
    return f"postgresql://{user}{'@' if user else ''}{host}:{port}/{parts.get('dbname', '')}"


def scrub(text: str, dsn: str) -> str:
    """``text`` with the DSN's password (and the DSN itself) replaced by ``***``."""
    password = str(_parse(dsn).get("password", "") or "")
    for secret in (dsn, password):
        if secret:
            text = text.replace(secret, "***")
    return text


def _parse(dsn: str) -> dict[str, str | int | None]:
    try:
        return conninfo_to_dict(dsn)
    except Exception as err:  # psycopg.ProgrammingError; its text may quote the DSN
        raise FailedPrecondition(
            "the PostgreSQL DSN is not valid (expected postgresql://user:password@host:port/db "
            f"or key=value pairs): {str(err).replace(dsn, '***')}") from None
