"""Command line: ``memsidecar serve [--config FILE] [--listen ADDR] [--data-dir DIR]``,
``memsidecar config check FILE``, ``memsidecar config docs``,
``memsidecar token add|list|revoke --data-dir DIR``,
``memsidecar migrate --from sqlite:PATH|postgres:DSN --to ... [--append]``."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any

from sidecar.api.server_config import DEFAULT_DATA_DIR
from sidecar.auth.cli import token_command
from sidecar.config.startup import check, docs, open_settings
from sidecar.errors import DomainError
from sidecar.redact import escape, loggable
from sidecar.store import migrate_cli

log = logging.getLogger("sidecar")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memsidecar", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gRPC sidecar")
    serve.add_argument("--config", help="TOML config file (default: DATA_DIR/memsidecar.toml "
                       "if it exists, else built-in defaults)")
    serve.add_argument(
        "--listen", help="HOST:PORT or unix:///path/to.sock (default 127.0.0.1:50051)"
    )
    serve.add_argument(
        "--data-dir", help="directory of the SQLite file and indexes (default ./data)"
    )
    serve.add_argument("--log-level", default=os.environ.get("MEMSIDECAR_LOG", "INFO"))
    config = sub.add_parser("config", help="config file tools")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    checker = config_sub.add_parser("check", help="validate FILE, print the effective config")
    checker.add_argument("file")
    checker.add_argument("--log-level", default="WARNING")
    documenter = config_sub.add_parser(
        "docs", help="print the configuration reference (Markdown, docs/configuration.md)")
    documenter.add_argument("--log-level", default="WARNING")
    _token_parser(sub)
    migrate_cli.add_parser(sub)
    return parser


def _token_parser(sub: Any) -> None:
    token = sub.add_parser("token", help="bearer tokens for [server.auth]")
    token_sub = token.add_subparsers(dest="token_command", required=True)
    add = token_sub.add_parser("add", help="create a token; prints it once, on the last line")
    who = add.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", help="the agent the token acts for")
    who.add_argument("--operator", action="store_true", help="a token for every agent")
    listing = token_sub.add_parser("list", help="token ids, roles and agents (never tokens)")
    revoke = token_sub.add_parser("revoke", help="delete a token by id")
    revoke.add_argument("id")
    for command in (add, listing, revoke):
        command.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
        command.add_argument("--log-level", default="WARNING")


_STANDARD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName"}


class FieldsFormatter(logging.Formatter):
    """Appends a record's structured fields (``extra=``) as ``key=value`` pairs.

    Caller strings never reach the log raw: the message and every field value have control
    characters escaped (no forged lines) and field values are cut (``sidecar.redact``)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return escape(super().formatMessage(record))

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = {k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS}
        if fields:
            text += " " + " ".join(f"{k}={loggable(v)}" for k, v in fields.items())
        return text


def _configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(FieldsFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])


def serve(args: argparse.Namespace) -> int:
    from sidecar.api.exposure import check_exposure
    from sidecar.api.server import create_server
    from sidecar.app import App

    os.umask(0o077)  # every file and socket the server creates is owner-only
    config, settings = open_settings(args.config, args.listen, args.data_dir)
    check_exposure(config, config.listen, warn=False)  # refuse before the slow start-up
    app = App.open(config, settings=settings)
    try:
        server = create_server(app)
    except Exception:
        app.close()
        raise
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    log.info("memsidecar listening on %s (data in %s)", config.listen, config.data_dir)
    # A signal may be delivered to one of gRPC's threads; the main thread only runs the
    # Python handler when it wakes, so wait in short slices rather than forever.
    while not stop.wait(0.2):
        pass
    log.info("shutting down")
    server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(args.log_level)
    try:
        if args.command == "serve":
            return serve(args)
        if args.command == "config":
            return check(args.file) if args.config_command == "check" else docs()
        if args.command == "token":
            return token_command(args)
        if args.command == "migrate":
            return migrate_cli.migrate_command(args)
    except DomainError as err:
        print(f"memsidecar: {err.message}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"memsidecar: {err}", file=sys.stderr)
        return 2
    return 1
