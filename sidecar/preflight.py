"""The start-up checks that need neither the network nor the data dir.

``memsidecar serve`` runs them before it opens anything (the first failure stops the start,
exit 2); ``memsidecar config check`` runs every one, reports each, and names the checks only a
start can make (binding the addresses, the data dir, a PostgreSQL connection).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sidecar.api.exposure import check_exposure, is_local
from sidecar.api.server_config import ServerConfig
from sidecar.auth.tls import read_tls
from sidecar.config.schema import Config
from sidecar.errors import DomainError
from sidecar.listen import check_grpc_listen, check_http_listen

# A check returns what it found (one short phrase) or raises what serve would stop with.
CheckFn = Callable[[ServerConfig, Config], str]


@dataclass(frozen=True, slots=True)
class Outcome:
    name: str
    found: str  # what the check found, when it passed
    error: str = ""  # why serve would refuse to start; "" = passed


def _listen(server: ServerConfig, config: Config) -> str:
    check_grpc_listen(server.listen)
    return server.listen


def _exposure(server: ServerConfig, config: Config) -> str:
    check_exposure(server, server.listen, warn=False)
    if is_local(server.listen):
        return "loopback or Unix socket"
    return "remote, auth on" if server.auth.enabled else "remote, allow_insecure_remote"


def _tls(server: ServerConfig, config: Config) -> str:
    if not server.tls.enabled:
        return "off"
    files = read_tls(server.tls)
    until = files.validity.not_after.strftime("%Y-%m-%d %H:%M UTC")
    mode = "mutual TLS" if files.client_ca is not None else "on"
    return f"{mode}, certificate valid until {until}"


def _http(server: ServerConfig, config: Config) -> str:
    check_http_listen(server.http.listen)
    return server.http.listen or "off"


def _model(server: ServerConfig, config: Config) -> str:
    from sidecar.embedding.models import model_files

    model_files(config.embedding.model)
    return config.embedding.model


def _store(server: ServerConfig, config: Config) -> str:
    if config.store.backend != "postgres":
        return config.store.backend
    from sidecar.store.postgres.dsn import describe, resolve

    return f"postgres at {describe(resolve(config.store.dsn))}"


CHECKS: tuple[tuple[str, CheckFn], ...] = (
    ("listen address", _listen),
    ("authentication for that address", _exposure),
    ("TLS files", _tls),
    ("HTTP address", _http),
    ("embedding model files", _model),
    ("store", _store),
)


def require(server: ServerConfig, config: Config) -> None:
    """Every check, in order; the first failure propagates (``serve``)."""
    for _, check in CHECKS:
        check(server, config)


def run_all(server: ServerConfig, config: Config) -> list[Outcome]:
    """Every check's outcome (``config check``)."""
    outcomes = []
    for name, check in CHECKS:
        try:
            outcomes.append(Outcome(name, check(server, config)))
        except (OSError, DomainError) as err:
            outcomes.append(Outcome(name, "", str(getattr(err, "message", err))))
    return outcomes


def not_run(server: ServerConfig, config: Config) -> list[str]:
    """What only a start checks: it needs the network or the data dir."""
    binds = " and ".join(a for a in (server.listen, server.http.listen) if a)
    left = [f"binding {binds} (free, allowed): needs the network",
            f"the data dir ({Path(server.data_dir).resolve()}): one server per dir, "
            "permissions, the database's version and integrity, the tokens file, the "
            "block-signing key"]
    if config.store.backend == "postgres":
        left.append("the PostgreSQL connection and schema: needs the network")
    return left
