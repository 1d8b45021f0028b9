"""The admin pages list scopes a page at a time: 5,000+ agents give pages of bounded size,
and the Next / Previous links walk every scope exactly once."""

from __future__ import annotations

import html
import http.client
import re
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from memsidecar.v1 import settings_pb2 as st

from sidecar.admin.pages.memory_page import SHOWN
from sidecar.admin.pages.vault_page import PROPOSALS_SHOWN
from sidecar.admin.scopes import PAGE_SIZE
from sidecar.admin.suggestions import SCOPES_HELD, SuggestionCache
from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import identity
from sidecar.records import Memory, MemoryType, Tier
from sidecar.store.db import Database
from sidecar.store.model_repo import MODEL_KEY, ModelRepo
from sidecar.store.repos import Repositories
from sidecar.vault.config import VaultConfig
from tests.admin.conftest import Site, start_site
from tests.conftest import settings_for
from tests.injection.helpers import put

AGENTS = 5_100


def fill(config: ServerConfig, agents: int, shared: int = 2) -> None:
    """One memory per agent (agent-00000 ...), ``shared`` shared ones and one forgotten, written
    into the SQLite file before the server opens it (embedding 5,000 texts would take
    minutes)."""
    Path(config.data_dir).mkdir(parents=True, exist_ok=True)
    db = Database(config.db_path)
    try:
        repo = Repositories.open(db).memories
        rng = np.random.default_rng(5)
        now = time.time_ns() // 1000
        with db.transaction():
            owners = [f"agent-{i:05d}" for i in range(agents)] + [""] * shared + ["agent-00003"]
            for n, agent in enumerate(owners):
                vector = rng.standard_normal(384).astype(np.float32)
                repo.insert(Memory(
                    id=f"m{n}", content=f"memory {n}", type=MemoryType.FACT, importance=0.5,
                    created_at=now, updated_at=now, last_accessed_at=0, access_count=0,
                    source="test", channel_id="", agent_id=agent, forgotten=n == len(owners) - 1,
                    version=1, tier=Tier.REGISTER if n % 7 == 0 else Tier.CANON),
                    vector / np.linalg.norm(vector))
            ModelRepo(db).set(MODEL_KEY, identity(EmbeddingConfig().model).to_json())
    finally:
        db.close()


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Site]:
    data = tmp_path_factory.mktemp("crowded")
    config = ServerConfig(listen="127.0.0.1:0", data_dir=str(data / "data"))
    fill(config, AGENTS)
    site = start_site(config, embedder)
    yield site
    site.live.close()


def get(site: Site, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", int(site.base.rsplit(":", 1)[1]))
    conn.request("GET", path)
    reply = conn.getresponse()
    out = reply.status, reply.read().decode()
    conn.close()
    return out


def links(text: str, label: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(rf'<a href="([^"]+)">{label}</a>', text)]


def rows(text: str) -> list[str]:
    """The scope names of the page's scope table (first cells: a link to the scope's
    memories on the home page, the name on /vault)."""
    return [html.unescape(s) for s in re.findall(
        r'<tr><td><bdi>(?:<a href="/memories(?:\?[^"]*)?">)?([^<]*)(?:</a>)?</bdi></td><td>\d',
        text)]


@pytest.mark.parametrize("path", ["/", "/vault"])
def test_every_scope_once_in_pages_of_bounded_size(crowded: Site, path: str) -> None:
    seen: list[str] = []
    target, pages, biggest = path, [], 0
    while True:
        status, text = get(crowded, target)
        assert status == 200, text[:500]
        found = rows(text)
        assert 0 < len(found) <= PAGE_SIZE
        biggest = max(biggest, len(text))
        seen += found
        pages.append((target, found))
        following = links(text, "Next scopes")
        if not following:
            break
        target = following[0]
    assert seen == ["(shared)"] + [f"agent-{i:05d}" for i in range(AGENTS)]
    assert len(pages) == -(-(AGENTS + 1) // PAGE_SIZE)
    assert biggest < 40_000  # a few KB per page, whatever the number of agents
    assert f"{AGENTS + 1} scopes" in get(crowded, path)[1]
    # Previous goes back exactly one page, also from the last.
    for index in (1, len(pages) - 1):
        text = get(crowded, pages[index][0])[1]
        back = links(text, "Previous scopes")
        assert len(back) == 1 and rows(get(crowded, back[0])[1]) == pages[index - 1][1]
    assert not links(get(crowded, path)[1], "Previous scopes")


def test_the_vault_page_keeps_the_scope_shown_while_paging(crowded: Site) -> None:
    status, text = get(crowded, "/vault?scope=agent-00003")
    assert status == 200 and "Scope: <bdi>agent-00003</bdi>" in text
    following = links(text, "Next scopes")
    assert following and "scope=agent-00003" in following[0]
    status, text = get(crowded, following[0])
    assert status == 200 and "Scope: <bdi>agent-00003</bdi>" in text
    counts = re.search(r"<td><bdi>agent-00003</bdi></td><td>(\d+)</td><td>(\d+)</td>", get(
        crowded, "/vault")[1])
    assert counts is not None and counts.groups() == ("1", "1")  # live, forgotten


def test_the_memories_page_lists_a_bounded_page_of_agents(crowded: Site) -> None:
    status, text = get(crowded, "/memories")
    assert status == 200
    agents = re.findall(r'<a href="/memories\?agent=(agent-\d+)">', text)
    assert len(agents) == PAGE_SIZE - 1  # the first page also holds the shared scope
    following = links(text, "Next scopes")
    assert following
    status, text = get(crowded, following[0])
    assert status == 200 and f"agent-{PAGE_SIZE - 1:05d}" in text


@pytest.mark.parametrize("token", ["bogus", "x" * 200, "%3Eagent"])
def test_a_forged_position_is_a_clear_page(crowded: Site, token: str) -> None:
    status, text = get(crowded, f"/?scopes={token}")
    if token.startswith("%3E"):  # a valid position, just not one of the page's links
        assert status == 200 and rows(text)
    else:
        assert status == 400 and "scopes must come from a Next or Previous link" in text


def test_the_suggestion_cache_holds_a_bounded_number_of_scopes(crowded: Site) -> None:
    cache = SuggestionCache(crowded.live.server.app.vault)
    first = cache.get("agent-00000")
    for i in range(1, SCOPES_HELD + 1):
        cache.get(f"agent-{i:05d}")
    last = cache.get(f"agent-{SCOPES_HELD:05d}")
    assert cache.get(f"agent-{SCOPES_HELD:05d}") is last  # still held
    assert cache.get("agent-00000") is not first  # the oldest was let go, computed again


def test_the_memory_page_shows_the_latest_versions_only(site: Site) -> None:
    for n in range(SHOWN + 5):
        put(site.live, f"the deploy moved to slot {n}", id="busy")
    status, text = get(site, "/memory?id=busy")
    assert status == 200
    assert text.count("the deploy moved to slot") == SHOWN + 1  # the fields, then versions
    assert f"slot {SHOWN + 4}" in text and "slot 3<" not in text
    assert "5 older versions not shown." in text


def test_the_settings_page_lists_a_bounded_page_of_agents(site: Site) -> None:
    off = st.MemoryInjectionConfig(enabled=False)
    names = [f"bot-{i:03d}" for i in range(PAGE_SIZE + 7)]
    for name in names:
        site.live.settings.UpdateConfig(st.UpdateConfigRequest(agent_id=name,
                                                               memory_injection=off))
    status, text = get(site, "/settings?agent=bot-055")
    assert status == 200
    listed = re.findall(r'<a href="/settings\?agent=(bot-\d+)">', text)
    assert listed == names[:PAGE_SIZE] and "<h1>Settings: agent bot-055</h1>" in text
    following = links(text, "Next agents")
    assert following and "agent=bot-055" in following[0]
    status, text = get(site, following[0])
    listed = re.findall(r'<a href="/settings\?agent=(bot-\d+)">', text)
    assert listed == [n for n in names[PAGE_SIZE:] if n != "bot-055"]
    assert "<h1>Settings: agent bot-055</h1>" in text and not links(text, "Next agents")
    back = links(text, "Previous agents")
    assert back and re.findall(r'<a href="/settings\?agent=(bot-\d+)">', get(
        site, back[0])[1]) == names[:PAGE_SIZE]


def test_the_vault_page_shows_a_bounded_number_of_proposals(
        tmp_path: Path, embedder: Embedder) -> None:
    config = ServerConfig(listen="127.0.0.1:0", data_dir=str(tmp_path / "data"))
    fill(config, 3, shared=PROPOSALS_SHOWN + 30)
    site = start_site(config, embedder, settings_for(config, vault=VaultConfig(
        duplicate_gate=False, stale_after_days=0, stale_max_importance=1.0)))
    try:
        status, text = get(site, "/vault")
    finally:
        site.live.close()
    assert status == 200 and text.count("<td>STALE_LOW_IMPORTANCE</td>") == PROPOSALS_SHOWN
    assert "30 more not shown" in text
