"""A real sidecar with its HTTP port on, and Debian's chromium driven by Playwright.

`make chromium` installs the browser when missing; a machine that cannot install it fails
these tests, never skips them. Scripts are off in every page: the admin page works without.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, Playwright, sync_playwright

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, ConfigStore
from sidecar.embedding import Embedder
from sidecar.vault.config import VaultConfig
from tests.clients.agent_loops import ROOT, build
from tests.conftest import Running, settings_for

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
SCREENSHOT = ROOT / "build" / "admin.png"


@dataclass
class Site:
    live: Running
    base: str  # http://127.0.0.1:PORT

    def url(self, path: str) -> str:
        return self.base + path


def start_site(config: ServerConfig, embedder: Embedder,
               settings: ConfigStore | None = None, http_listen: str = "127.0.0.1:0",
               listen: str = "127.0.0.1:0") -> Site:
    config = replace(config, listen=listen, http=replace(config.http, listen=http_listen))
    if settings is None:
        settings = vault_settings(config)
    server = create_server(App.open(config, embedder=embedder, settings=settings))
    server.start()
    assert server.http is not None
    return Site(Running(server), f"http://127.0.0.1:{server.http.port}")


def vault_settings(config: ServerConfig) -> ConfigStore:
    """Near-duplicates stay apart (the vault page proposes them); the store is the one the
    config file in the data dir names (SQLite when none)."""
    store = ConfigStore.open(Path(config.data_dir) / CONFIG_FILENAME).current.store
    return settings_for(config, vault=VaultConfig(duplicate_gate=False), store=store)


@pytest.fixture
def site(config: ServerConfig, embedder: Embedder) -> Iterator[Site]:
    running = start_site(config, embedder)
    yield running
    running.live.close()


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    build("chromium")
    assert CHROMIUM.exists(), "make chromium did not install /usr/bin/chromium"
    with sync_playwright() as driver:
        yield driver


@pytest.fixture
def browser(playwright: Playwright, tmp_path: Path) -> Iterator[BrowserContext]:
    """A fresh profile (empty user-data-dir), scripts off."""
    profile = tmp_path / "profile"
    profile.mkdir()
    context = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=str(CHROMIUM), headless=True, args=ARGS,
        java_script_enabled=False, viewport={"width": 1280, "height": 900})
    yield context
    context.close()


@pytest.fixture
def tab(browser: BrowserContext) -> Page:
    tab = browser.pages[0] if browser.pages else browser.new_page()
    tab.set_default_timeout(20_000)
    return tab
