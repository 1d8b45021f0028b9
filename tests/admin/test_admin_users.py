"""The admin pages count end users' memories per agent and list one user's memories; no
metric series is made per user."""

from __future__ import annotations

from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from tests.admin.conftest import Site
from tests.admin.test_admin_scopes import get

SAID = {"u-ana": ["Ana prefers calls after five", "Ana's invoices go to her office address"],
        "u-ben": ["Ben uses the mobile app only"]}


def test_the_vault_page_counts_each_agents_end_users(site: Site) -> None:
    for user, texts in SAID.items():
        for text in texts:
            site.live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
                content=text, type=m.MEMORY_TYPE_PREFERENCE, agent_id="desk", user_id=user)))
    site.live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content="Support hours are nine to five", type=m.MEMORY_TYPE_FACT, agent_id="desk")))
    status, text = get(site, "/vault")
    assert status == 200
    assert "<td>desk</td><td>4</td><td>0</td><td>4</td><td>0</td><td>2</td><td>3</td>" in text
    status, text = get(site, "/vault?scope=desk")
    assert "<td>u-ana</td><td>2</td><td>0</td>" in text and "<td>u-ben</td><td>1</td>" in text
    assert text.index("u-ana") < text.index("u-ben")  # the most memories first
    status, text = get(site, "/memories?agent=desk&user=u-ben")
    assert status == 200 and "Ben uses the mobile app only" in text
    assert "Ana prefers" not in text and "desk · user u-ben" in text
    _, metrics = get(site, "/metrics")
    assert "u-ana" not in metrics and "u-ben" not in metrics
