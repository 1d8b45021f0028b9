"""``memsidecar serve``: run the gRPC sidecar until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sidecar.cli.args import add_log_level
from sidecar.cli.logs import FORMATS
from sidecar.cli.sd_notify import READY, STOPPING, notify
from sidecar.listen import bind_error, grpc_listen_error

if TYPE_CHECKING:
    from sidecar.api.server_config import ServerConfig

log = logging.getLogger("sidecar")


def add(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--config", help="TOML config file (default: DATA_DIR/memsidecar.toml "
                       "if it exists, else built-in defaults)")
    serve.add_argument(
        "--listen", help="HOST:PORT or unix:///path/to.sock (default 127.0.0.1:50051)"
    )
    serve.add_argument(
        "--http-listen", metavar="HOST:PORT",
        help="the admin page and /metrics (default [server.http] listen, 127.0.0.1:9464); "
        "'' turns them off; a port that cannot be bound stops the start")
    serve.add_argument(
        "--data-dir", help="directory of the SQLite file and indexes (default ./data)"
    )
    add_log_level(serve, os.environ.get("MEMSIDECAR_LOG", "INFO"))
    serve.add_argument("--log-format", choices=FORMATS, default="text",
                       help="text: one line per record with key=value fields; json: one JSON "
                       "object per line (time, level, logger, message, fields)")
    serve.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sidecar.api.server import create_server
    from sidecar.app import App
    from sidecar.config.startup import open_settings
    from sidecar.preflight import require

    os.umask(0o077)  # every file and socket the server creates is owner-only
    # As PID 1 (a container) SIGTERM has no default action: during start-up it interrupts like
    # Ctrl-C (KeyboardInterrupt, the start-up closes what it opened), then it stops the server.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    config, settings = open_settings(args.config, args.listen, args.data_dir,
                                     args.http_listen)
    require(config, settings.current)  # what needs no network nor data dir, before the rest
    _addresses_free(config)  # a busy port refuses the start before the data dir is touched
    app = App.open(config, settings=settings)
    try:
        server = create_server(app)
    except BaseException:
        app.close()
        raise
    received = _catch_stop_signals()
    server.start()
    log.info("memsidecar listening on %s (data in %s)", config.listen,
             Path(config.data_dir).resolve(),
             extra={"http": config.http.listen or "off"})
    notify(READY)  # systemd's Type=notify: started, warmed up, SERVING
    # A signal may be delivered to one of gRPC's threads; the main thread only runs the
    # Python handler when it wakes, so sleep in short slices rather than forever.
    while not received:
        time.sleep(0.2)
    log.info("shutting down")
    notify(STOPPING)
    server.stop()
    return 0


def _addresses_free(config: ServerConfig) -> None:
    """Refuse the start (one line, exit 2) when the gRPC or the HTTP address cannot be bound
    now. Checked by binding before the store is opened, so a refused start leaves the data dir
    as it was, and gRPC's C core logs nothing of its own. The server binds for real later: an
    address taken in between still refuses the start there, after the store was opened."""
    from sidecar.metrics.http import http_listen_error

    busy = bind_error(config.listen)
    if busy is not None:
        raise grpc_listen_error(config.listen, busy.strerror or str(busy))
    busy = bind_error(config.http.listen) if config.http.listen else None
    if busy is not None:
        raise http_listen_error(config.http.listen, busy.strerror or str(busy))


def _catch_stop_signals() -> list[int]:
    """From here on, SIGTERM and SIGINT append to the list returned (one asked for during the
    warm-up is acted on once it is done)."""
    received: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        # The handler only appends: a handler that takes a lock (Event.set) deadlocks when
        # the signal lands while the main thread holds that same lock.
        signal.signal(sig, lambda signum, _frame: received.append(signum))
    return received
