"""Which file the sidecar reads at startup, and ``memsidecar config docs``.

Rules: ``--config FILE`` must exist and be valid; without it, ``DATA_DIR/memsidecar.toml``
is read when it exists (DATA_DIR from --data-dir, else the default), else built-in defaults.
``--listen`` / ``--data-dir`` / ``--http-listen`` override the file's [server] values.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from sidecar.api.server_config import DEFAULT_DATA_DIR, ServerConfig
from sidecar.config.docs import reference
from sidecar.config.schema import CONFIG_FILENAME
from sidecar.config.store import ConfigStore


def open_settings(
    config_path: str | None, listen: str | None = None, data_dir: str | None = None,
    http_listen: str | None = None,
) -> tuple[ServerConfig, ConfigStore]:
    """The running [server] config and the live store; raises ConfigError on a bad file."""
    if config_path:
        store = ConfigStore.open(Path(config_path), required=True)
    else:
        store = ConfigStore.open(Path(data_dir or DEFAULT_DATA_DIR) / CONFIG_FILENAME)
    return overridden(store.current.server, listen, data_dir, http_listen), store


def overridden(server: ServerConfig, listen: str | None = None, data_dir: str | None = None,
               http_listen: str | None = None) -> ServerConfig:
    """The file's [server] with the command line's values in their place."""
    if listen:
        server = replace(server, listen=listen)
    if data_dir:
        server = replace(server, data_dir=data_dir)
    if http_listen is not None:  # "" = off
        server = replace(server, http=replace(server.http, listen=http_listen))
    return server


def docs() -> int:
    """Print the configuration reference (Markdown) generated from the schema."""
    sys.stdout.write(reference())
    return 0
