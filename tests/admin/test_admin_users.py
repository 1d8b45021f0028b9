"""The admin pages count end users' memories per agent and list one user's memories; no
metric series is made per user."""

from __future__ import annotations

from urllib.parse import quote

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
    assert ("<td><bdi>desk</bdi></td><td>4</td><td>0</td><td>4</td><td>0</td><td>2</td>"
            "<td>3</td>") in text
    status, text = get(site, "/vault?scope=desk")
    assert "<td><bdi>u-ana</bdi></td><td>2</td><td>0</td>" in text
    assert "<td><bdi>u-ben</bdi></td><td>1</td>" in text
    assert text.index("u-ana") < text.index("u-ben")  # the most memories first
    status, text = get(site, "/memories?agent=desk&user=u-ben")
    assert status == 200 and "Ben uses the mobile app only" in text
    assert "Ana prefers" not in text and "<bdi>desk</bdi> · user <bdi>u-ben</bdi>" in text
    _, metrics = get(site, "/metrics")
    assert "u-ana" not in metrics and "u-ben" not in metrics


def test_the_search_page_searches_as_an_end_user(site: Site) -> None:
    """/search?user= reads what a Search with that user_id reads: the user's private memories
    beside the agent's and the shared ones; another user's never, nor any without a user."""
    private = site.live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content="Ana's parcel locker is number 4417 at the station", type=m.MEMORY_TYPE_FACT,
        agent_id="desk", user_id="u-ana"))).memory.id
    general = site.live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content="Parcel lockers at the station close at midnight", type=m.MEMORY_TYPE_FACT,
        agent_id="desk"))).memory.id
    ask = "/search?" + "&".join(f"{k}={quote(v)}" for k, v in
                                (("q", "parcel locker at the station"), ("agent", "desk")))
    found = {}
    for user in ("u-ana", "u-ben", ""):
        status, text = get(site, f"{ask}&user={quote(user)}")
        assert status == 200, text
        found[user] = {i for i in (private, general) if f"id={i}" in text}
        assert 'name="user" value="' + user + '"' in text
    for user, seen in found.items():
        want = {private, general} if user == "u-ana" else {general}
        grpc_hits = site.live.store.Search(s.SearchRequest(
            query="parcel locker at the station", agent_id="desk", user_id=user)).hits
        assert seen == want == {h.memory.id for h in grpc_hits} & {private, general}, user


def test_the_search_pages_user_is_validated_as_every_name(site: Site) -> None:
    status, text = get(site, "/search?q=parcel&agent=desk&user=" + quote("u\x01ana"))
    assert status == 400 and "user contains a control character" in text
    status, text = get(site, "/search?q=parcel&user=" + "u" * 300)
    assert status == 400 and "user has 300 characters; at most 256" in text


def test_the_memories_pages_filters_are_validated_as_every_name(site: Site) -> None:
    for name in ("agent", "channel", "source", "user"):
        status, text = get(site, f"/memories?{name}=" + quote("x\x01y"))
        assert status == 400 and name in text, name
        status, text = get(site, f"/memories?{name}=" + "x" * 300)
        assert status == 400 and f"{name} has 300 characters; at most 256" in text, name
    status, _ = get(site, "/memories?agent=desk&user=" + quote("u\u202eana"))
    assert status == 200  # format characters are allowed in names, as everywhere
