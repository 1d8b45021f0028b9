"""Through the real server, a text's vector does not depend on the texts it was written with."""

from __future__ import annotations

from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from tests.conftest import Running
from tests.embedding import golden

TEXT = "Billing runs on PostgreSQL 16 since the March migration; replicas in two zones."


def test_a_text_imported_in_a_batch_scores_as_when_upserted_alone(running: Running) -> None:
    others = [t for t in golden.texts() if len(t) > 12][:63]  # 3 to 256 model tokens
    assert len(others) == 63
    alone = running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=TEXT, type=m.MEMORY_TYPE_FACT, agent_id="alone"))).memory
    batch = [*others[:31], TEXT, *others[31:]]
    summary = running.store.ImportMemories(iter(
        s.UpsertMemoryRequest(memory=m.Memory(content=t, type=m.MEMORY_TYPE_FACT,
                                              agent_id="batch")) for t in batch))
    assert summary.stored + summary.deduplicated == len(batch)
    cosines = {}
    for agent in ("alone", "batch"):
        hits = running.store.Search(s.SearchRequest(query=TEXT, agent_id=agent, limit=3)).hits
        (hit,) = [h for h in hits if h.memory.content == TEXT and h.memory.agent_id == agent]
        cosines[agent] = hit.cosine
    assert alone.agent_id == "alone"
    assert abs(cosines["alone"] - cosines["batch"]) <= 1e-4, cosines
