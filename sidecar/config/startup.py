"""Which file the sidecar reads at startup; ``memsidecar config check FILE`` and ``config docs``.

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
from sidecar.config.loader import load_file
from sidecar.config.report import render_effective
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
    server = store.current.server
    if listen:
        server = replace(server, listen=listen)
    if data_dir:
        server = replace(server, data_dir=data_dir)
    if http_listen is not None:  # "" = off
        server = replace(server, http=replace(server.http, listen=http_listen))
    return server, store


def check(path: str) -> int:
    """Validate a file, print its effective config per agent; 0 ok, 2 invalid (ConfigError)."""
    config = load_file(Path(path))
    sys.stdout.write(f"# {path}: OK ({len(config.agents)} agents)\n{render_effective(config)}")
    return 0


def docs() -> int:
    """Print the configuration reference (Markdown) generated from the schema."""
    sys.stdout.write(reference())
    return 0
