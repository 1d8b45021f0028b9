"""A scope's rows for its load: the one-statement read of PostgreSQL against the exact
reference (its memories, then the edges from them), on both backends."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sidecar.records import Edge, Relation
from sidecar.store.contract import SqlStore
from sidecar.store.repos import Repositories
from sidecar.store.scope_rows import scope_rows, scope_rows_apart, scope_rows_joined
from tests.store.contract_data import memory, vector

SCOPES = [("", ""), ("a1", ""), ("a1", "u1"), ("a1", "u2"), ("a2", "u1"), ("a3", "nobody")]


def fill(repos: Repositories) -> None:
    """Memories in several scopes (the shared one, an agent's own, its users', another
    agent's user of the same name), some forgotten, with edges inside a scope, across scopes
    both ways, from a forgotten memory and none at all from some."""
    stored = []
    for n in range(40):
        agent, user = SCOPES[n % 5]
        stored.append(repos.memories.insert(
            replace(memory(f"m{n}", agent_id=agent), user_id=user), vector(n)))
    for n in (7, 12, 22):
        repos.memories.update(replace(stored[n], forgotten=True, version=2), None)
    for n in range(0, 40, 2):
        repos.edges.upsert(Edge(f"m{n}", f"m{(n + 5) % 40}", Relation.RELATED_TO, 0.5, n))
        repos.edges.upsert(Edge(f"m{n}", f"m{(n + 1) % 40}", Relation.UPDATES, 0.25, n + 1))
    repos.edges.upsert(Edge("m12", "m2", Relation.CAUSED_BY, 1.0, 99))


def flat(pages: list[tuple[list, np.ndarray]]) -> tuple[list, np.ndarray]:
    memories = [m for found, _ in pages for m in found]
    vectors = np.vstack([v for _, v in pages]) if pages else np.zeros((0, 0), np.float32)
    return memories, vectors


def edge_set(edges: list[Edge]) -> list[tuple]:
    return sorted((e.source_id, e.target_id, int(e.relation), e.weight, e.created_at)
                  for e in edges)


@pytest.mark.parametrize("page", [1, 3, 4096])
def test_a_scopes_rows_equal_its_memories_then_their_edges(store_db: SqlStore,
                                                            page: int) -> None:
    repos = Repositories.open(store_db)
    fill(repos)
    read_ways = [scope_rows]
    if store_db.dialect == "postgres":
        read_ways.append(lambda memories, _edges, agent, user, page: scope_rows_joined(
            memories, agent, user, page))
    for agent, user in SCOPES:
        pages, edges = scope_rows_apart(repos.memories, repos.edges, agent, user, page)
        memories, vectors = flat(pages)
        for read in read_ways:
            got_pages, got_edges = read(repos.memories, repos.edges, agent, user, page)
            assert [len(found) for found, _ in got_pages] == [len(found) for found, _ in pages]
            got, got_vectors = flat(got_pages)
            assert got == memories  # every field, in seq order
            np.testing.assert_array_equal(got_vectors, vectors)
            assert edge_set(got_edges) == edge_set(edges)
        if user != "nobody":
            assert memories and all(m.agent_id == agent and m.user_id == user
                                    and not m.forgotten for m in memories)
    # The user's live memories m2, m17, m27, m32, m37: the edges from m2 and m32 (m12's, into
    # m2, left with the forgotten m12).
    assert edge_set(scope_rows(repos.memories, repos.edges, "a1", "u1", page)[1]) == [
        ("m2", "m3", int(Relation.UPDATES), 0.25, 3),
        ("m2", "m7", int(Relation.RELATED_TO), 0.5, 2),
        ("m32", "m33", int(Relation.UPDATES), 0.25, 33),
        ("m32", "m37", int(Relation.RELATED_TO), 0.5, 32)]
