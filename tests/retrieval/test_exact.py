from __future__ import annotations

import numpy as np

from sidecar.app import App
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.contract import SearchQuery
from sidecar.retrieval.exact import ExactVectorRetriever


def test_exact_search_follows_writes_and_scopes(app: App) -> None:
    svc = app.memories
    auth = svc.upsert(MemoryDraft("We use JWT tokens for API auth", MemoryType.DECISION)).memory
    svc.upsert(MemoryDraft("Grandma grows tomatoes", MemoryType.FACT))
    private = svc.upsert(MemoryDraft("Bob's auth token rotation runbook", MemoryType.FACT,
                                     agent_id="bob")).memory
    hits = app.retriever.search(SearchQuery("how do we authenticate the API?", limit=5)).hits
    assert hits[0].memory.id == auth.id
    assert private.id not in {h.memory.id for h in hits}
    bob = app.retriever.search(SearchQuery("auth token", agent_id="bob", limit=5)).hits
    assert private.id in {h.memory.id for h in bob}
    svc.forget(auth.id)
    hits = app.retriever.search(SearchQuery("how do we authenticate the API?", limit=5)).hits
    assert auth.id not in {h.memory.id for h in hits}
    scores = [h.cosine for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_reload_from_store_matches(app: App) -> None:
    for i in range(20):
        app.memories.upsert(MemoryDraft(f"memory about topic {i}", MemoryType.FACT))
    fresh = ExactVectorRetriever(app.embedder)
    fresh.load(app.memories.memories)
    q = SearchQuery("topic 7", limit=5)
    a = [h.memory.id for h in app.retriever.search(q).hits]
    b = [h.memory.id for h in fresh.search(q).hits]
    assert a == b and len(fresh) == 20
    vec = fresh.embedding_of(a[0])
    assert vec is not None and np.isclose(np.linalg.norm(vec), 1.0, atol=1e-5)
