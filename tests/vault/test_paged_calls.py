"""VaultStats pages of scopes and GetMemoryHistory's limit, over the real server."""

from __future__ import annotations

import grpc
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v
from memsidecar_client import Client, InvalidArgumentError

from tests.conftest import Running
from tests.vault.conftest import rpc_error, trailers, upsert


def test_vault_stats_pages_list_every_scope_exactly_once(running: Running) -> None:
    agents = [""] + [f"agent-{i:03d}" for i in range(250)]
    memories = [m.Memory(content=f"Fact {i} about the build farm", type=m.MEMORY_TYPE_FACT,
                         agent_id=agent) for i, agent in enumerate(agents)]
    done = running.store.ImportMemories(iter(s.UpsertMemoryRequest(memory=x) for x in memories))
    assert done.stored == 251
    pages: list[v.VaultStatsResponse] = []
    token = ""
    while True:
        pages.append(running.vault.VaultStats(v.VaultStatsRequest(page_token=token)))
        token = pages[-1].next_page_token
        if not token:
            break
    assert [len(p.scopes) for p in pages] == [100, 100, 51]  # page_size 0 = 100
    assert [sc.agent_id for p in pages for sc in p.scopes] == agents
    assert all((p.live, p.forgotten) == (251, 0) for p in pages)  # totals: the whole store
    for page in pages:
        assert [g.agent_id for g in page.groups] == [sc.agent_id for sc in page.scopes]
    big = running.vault.VaultStats(v.VaultStatsRequest(page_size=1000))
    assert len(big.scopes) == 251 and big.next_page_token == ""
    with Client(running.target) as client:
        assert [sc.agent_id for page in client.vault_stats_pages(page_size=64)
                for sc in page.scopes] == agents
        with pytest.raises(InvalidArgumentError):
            client.vault_stats(page_token="forged")


@pytest.mark.parametrize("request_,field,words", [
    (v.VaultStatsRequest(page_size=1001), "page_size", "at most 1000 (got 1001)"),
    (v.VaultStatsRequest(page_token="abc.def"), "page_token", "next_page_token"),
    (v.VaultStatsRequest(page_token="x" * 2049), "page_token", "at most 2048"),
])
def test_vault_stats_refuses_a_bad_page(running: Running, request_: v.VaultStatsRequest,
                                        field: str, words: str) -> None:
    err = rpc_error(lambda: running.vault.VaultStats(request_))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert trailers(err)["memsidecar-field"] == field
    assert field in err.details() and words in err.details()  # type: ignore[attr-defined]


def test_a_list_memories_token_is_not_a_vault_stats_token(running: Running) -> None:
    for i in range(3):
        upsert(running, f"Fact number {i} about deployments")
    listed = running.store.ListMemories(s.ListMemoriesRequest(page_size=1)).next_page_token
    err = rpc_error(lambda: running.vault.VaultStats(v.VaultStatsRequest(page_token=listed)))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    upsert(running, "A fact of agent b", agent_id="b")
    token = running.vault.VaultStats(v.VaultStatsRequest(page_size=1)).next_page_token
    err = rpc_error(lambda: running.store.ListMemories(s.ListMemoriesRequest(page_token=token)))
    assert trailers(err)["memsidecar-field"] == "page_token"


def test_history_limit_keeps_the_latest_versions_and_says_how_many(running: Running) -> None:
    first = upsert(running, "Release 1 ships on Monday", agent_id="h").memory
    for n in range(2, 13):
        upsert(running, f"Release {n} ships on Monday", id=first.id, agent_id="h")

    def history(limit: int, agent: str = "h") -> v.GetMemoryHistoryResponse:
        return running.vault.GetMemoryHistory(
            v.GetMemoryHistoryRequest(id=first.id, agent_id=agent, limit=limit))

    cut = history(5)
    assert cut.total_versions == 12 and [x.version for x in cut.versions] == [8, 9, 10, 11, 12]
    assert cut.versions[-1].content == "Release 12 ships on Monday"  # the current state last
    whole = history(0)  # 0 = the latest 100
    assert whole.total_versions == 12 and [x.version for x in whole.versions] == list(
        range(1, 13))
    err = rpc_error(lambda: history(1001))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert trailers(err)["memsidecar-field"] == "limit"
    assert "limit must be at most 1000" in err.details()  # type: ignore[attr-defined]
    with Client(running.target) as client:
        reply = client.memory_history(first.id, agent_id="h", limit=2)
        assert [x.version for x in reply.versions] == [11, 12] and reply.total_versions == 12
