"""memsidecar_client's Vault calls, keyword upserts and JSON Lines imports on a real sidecar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memsidecar.v1 import memory_pb2, vault_pb2
from memsidecar_client import Client, FailedPreconditionError, memory_from_dict, read_jsonl

from tests.conftest import Running


def test_keyword_upsert_with_type_and_tier_names(running: Running) -> None:
    with Client(running.target) as client:
        reply = client.upsert("Focus: the tokenizer", type="goal", tier="register",
                              topic_id="focus", agent_id="kw")
        assert reply.memory.type == memory_pb2.MEMORY_TYPE_GOAL
        assert reply.memory.tier == memory_pb2.TIER_REGISTER


def test_vault_calls(running: Running) -> None:
    with Client(running.target) as client:
        reg = client.upsert("Mission draft: ship the parser", type="goal", tier="register",
                            topic_id="mission", agent_id="v").memory
        promoted = client.promote_to_canon(reg.id, "Mission: ship the parser by June",
                                           agent_id="v").memory
        assert promoted.tier == memory_pb2.TIER_CANON and promoted.version == 2
        with pytest.raises(FailedPreconditionError) as err:
            client.promote_to_canon(reg.id, agent_id="v")
        assert err.value.reason == "ALREADY_CANON"
        events = [v.event for v in client.memory_history(reg.id, agent_id="v").versions]
        assert events == [vault_pb2.VERSION_EVENT_CREATE, vault_pb2.VERSION_EVENT_PROMOTE]
        assert "Mission: ship the parser by June" in client.snapshot("v").text
        scopes = {s.agent_id: s for s in client.vault_stats().scopes}
        assert scopes["v"].live == 1 and scopes["v"].canon == 1
        assert not client.consolidation_candidates("v", floor=0.5, limit=5).pairs
        assert not client.propose_deletions("v").candidates


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "\n")
    return path


def test_import_jsonl_in_batches_with_progress(running: Running, tmp_path: Path) -> None:
    records: list[object] = [{"content": f"Imported fact number {i} about the build farm",
                              "type": "fact", "agent_id": "imp"} for i in range(5)]
    records.insert(3, {"content": "  ", "type": "decision"})
    seen: list[tuple[int, int]] = []
    with Client(running.target) as client:
        summary = client.import_jsonl(write_jsonl(tmp_path / "m.jsonl", records),
                                      batch_size=2, progress=lambda d, t: seen.append((d, t)))
        assert seen == [(2, 6), (4, 6), (6, 6)]
        assert (summary.received, summary.stored, summary.rejected) == (6, 5, 1)
        assert [e.index for e in summary.errors] == [3] and summary.errors[0].reason
        assert len(summary.ids) == 5
        assert len(client.list(agent_id="imp", types=["fact"]).memories) >= 5


def test_import_jsonl_names_the_bad_line_and_sends_nothing(running: Running,
                                                           tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{"content": "fine"}, {"content": "x",
                                                                      "colour": "red"}])
    with Client(running.target) as client:
        with pytest.raises(ValueError, match=r"bad.jsonl:2: unknown key\(s\) \['colour'\]"):
            client.import_jsonl(path)
        assert client.vault_stats().live == 0


def test_records_parse_names_and_values(tmp_path: Path) -> None:
    memory = memory_from_dict({"content": "c", "type": "DECISION", "tier": "canon",
                               "importance": 0.25, "id": "m1"})
    assert (memory.type, memory.tier, memory.importance, memory.id) == (
        memory_pb2.MEMORY_TYPE_DECISION, memory_pb2.TIER_CANON, 0.25, "m1")
    with pytest.raises(ValueError, match="unknown tier 'gold'"):
        memory_from_dict({"content": "c", "tier": "gold"})
    (tmp_path / "list.jsonl").write_text("[1, 2]\n")
    with pytest.raises(ValueError, match="list.jsonl:1: expected a JSON object"):
        read_jsonl(tmp_path / "list.jsonl")
