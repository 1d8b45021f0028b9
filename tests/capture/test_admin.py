"""The admin page's Memories list filters on the source: the captured turns alone."""

from __future__ import annotations

from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.vault.config import VaultConfig
from tests.admin.conftest import start_site
from tests.admin.test_admin_scopes import get
from tests.capture.test_capture import AGENT, captured, inject
from tests.conftest import settings_for


def test_the_memories_page_lists_the_captured_turns(config: ServerConfig,
                                                    embedder: Embedder) -> None:
    site = start_site(config, embedder, settings_for(
        config, vault=VaultConfig(), defaults=MemoryInjectionConfig(capture="user")))
    try:
        site.live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content="Prefers short answers", type=m.MEMORY_TYPE_PREFERENCE, agent_id=AGENT)))
        inject(site.live, "I adopted a grey cat called Miso in May")
        assert len(captured(site.live)) == 1
        status, text = get(site, f"/memories?agent={AGENT}&source=capture")
        assert status == 200
        assert "I adopted a grey cat called Miso in May" in text
        assert "Prefers short answers" not in text
        status, text = get(site, f"/memories?agent={AGENT}")
        assert "Prefers short answers" in text and "grey cat called Miso" in text
    finally:
        site.live.close()
