"""An update delivers the new fact: superseding edges and version bumps, real model."""

from __future__ import annotations

import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.embedding import Embedder
from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put

OLD = "The staging cluster runs Kubernetes version 1.27"
NEW = "The staging cluster was upgraded and now runs Kubernetes version 1.29"
FAR = "Staging got the 1.29 upgrade over the weekend, done by Priya"
QUESTION = "Which Kubernetes version does the staging cluster run?"


def edge(live: Running, source: str, target: str, relation: int) -> None:
    live.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(
        source_id=source, target_id=target, relation=relation)))


@pytest.mark.parametrize("relation", [m.RELATION_UPDATES, m.RELATION_CONTRADICTS])
def test_newer_content_replaces_the_seen_one(serve: Serve, embedder: Embedder,
                                             relation: int) -> None:
    """B -> A (the source supersedes the target); the two texts are semantic duplicates."""
    assert float(embedder.embed_one(OLD) @ embedder.embed_one(NEW)) > 0.85
    live = serve()
    old = put(live, OLD)
    assert ids(inject(live, QUESTION)) == [old.id]
    new = put(live, NEW)
    edge(live, new.id, old.id, relation)
    reply = inject(live, QUESTION)
    assert ids(reply) == [new.id] and reply.items[0].is_update
    assert f"[Fact] (updated) {NEW}" in reply.block and OLD not in reply.block
    # neither comes back while the update is in view
    assert ids(inject(live, QUESTION)) == []


def test_far_apart_texts_update_is_marked_and_the_stale_one_stays_out(serve: Serve) -> None:
    live = serve()
    old = put(live, OLD)
    assert ids(inject(live, QUESTION)) == [old.id]
    new = put(live, FAR)
    edge(live, new.id, old.id, m.RELATION_UPDATES)
    reply = inject(live, QUESTION)
    assert ids(reply) == [new.id] and reply.items[0].is_update


def test_channel_that_never_saw_it_gets_the_successor_plainly(serve: Serve) -> None:
    live = serve()
    old = put(live, OLD)
    new = put(live, NEW)
    edge(live, new.id, old.id, m.RELATION_UPDATES)
    reply = inject(live, QUESTION, channel="fresh")
    assert ids(reply) == [new.id] and not reply.items[0].is_update
    assert OLD not in reply.block and "(updated)" not in reply.block


def test_the_edge_direction_decides(serve: Serve) -> None:
    """An edge from the older text to the newer one says the older text is the successor."""
    live = serve()
    old = put(live, OLD)
    new = put(live, NEW)
    edge(live, old.id, new.id, m.RELATION_UPDATES)
    assert ids(inject(live, QUESTION)) == [old.id]


def test_chain_of_updates_delivers_the_last(serve: Serve) -> None:
    live = serve()
    v1 = put(live, OLD)
    v2 = put(live, NEW)
    v3 = put(live, "The staging cluster now runs Kubernetes version 1.30")
    edge(live, v2.id, v1.id, m.RELATION_UPDATES)
    edge(live, v3.id, v2.id, m.RELATION_UPDATES)
    assert ids(inject(live, QUESTION)) == [v3.id]


def test_forgotten_successor_gives_the_old_fact_back(serve: Serve) -> None:
    live = serve()
    old = put(live, OLD)
    new = put(live, NEW)
    edge(live, new.id, old.id, m.RELATION_UPDATES)
    live.store.ForgetMemory(s.ForgetMemoryRequest(id=new.id))
    assert ids(inject(live, QUESTION)) == [old.id]
