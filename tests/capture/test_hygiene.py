"""Captured memories are counted apart, listed and filtered by source, forgotten from the CLI,
and kept out of the vault snapshot."""

from __future__ import annotations

import json

import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar.cli import main
from tests.capture.conftest import Serve
from tests.capture.test_capture import AGENT, captured, inject

TURNS = ("I adopted a grey cat called Miso in May", "My brother Tom is getting married in June")


def test_counted_listed_and_forgotten_apart(serve: Serve,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    live = serve(capture="user")
    live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content="Prefers short answers", type=m.MEMORY_TYPE_PREFERENCE, agent_id=AGENT)))
    for turn, text in enumerate(TURNS, 1):
        inject(live, text, turn=turn)
    assert len(captured(live)) == 2
    stats = live.vault.VaultStats(v.VaultStatsRequest())
    [scope] = [x for x in stats.scopes if x.agent_id == AGENT]
    assert (stats.captured, scope.captured, scope.live) == (2, 2, 3)
    listed = live.store.ListMemories(s.ListMemoriesRequest(agent_id=AGENT, source="capture"))
    assert sorted(x.content for x in listed.memories) == sorted(TURNS)
    snapshot = live.vault.GetSnapshot(v.GetSnapshotRequest(agent_id=AGENT))
    assert [x.content for x in snapshot.canon] == ["Prefers short answers"]

    assert main(["captured", "--addr", live.target, "--agent", AGENT]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(x["content"] for x in lines) == sorted(TURNS)
    assert {x["channel_id"] for x in lines} == {"c1"}
    assert main(["captured", "--addr", live.target, "--forget"]) == 0
    assert "2 captured memories erased" in capsys.readouterr().err
    stats = live.vault.VaultStats(v.VaultStatsRequest())
    assert stats.captured == 0 and stats.live == 1
    assert live.store.ListMemories(s.ListMemoriesRequest(agent_id=AGENT, source="capture")
                                   ).memories == []
