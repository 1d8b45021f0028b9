"""The two candidate pools: pinned memories by type, contextual memories by search."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sidecar.config.injection import MemoryInjectionConfig
from sidecar.injection.records import Candidate, Section
from sidecar.records import Memory
from sidecar.retrieval.contract import Retriever, SearchQuery
from sidecar.store.memories import ListQuery, MemoryRepo

# The vault's always-injected memories of an agent (canon, then active registers).
SnapshotSource = Callable[[str], Sequence[Memory]]


def pinned_pool(config: MemoryInjectionConfig, agent_id: str, repo: MemoryRepo,
                retriever: Retriever, query: np.ndarray,
                snapshot: SnapshotSource | None = None) -> list[Candidate]:
    """The pinned section (ambient only).

    ``pinned_source = "types"``: per pinned type, ``pinned_limit`` memories in
    ``pinned_sort`` order. ``"snapshot"``: the first ``pinned_limit`` memories of the
    vault snapshot, in snapshot order.
    """
    if not config.ambient_enabled or config.pinned_limit <= 0:
        return []
    if config.pinned_source == "snapshot":
        if snapshot is None:
            return []
        chosen = list(snapshot(agent_id))[: config.pinned_limit]
        return [_pinned(m, retriever, repo, query) for m in chosen]
    if not config.pinned_types:
        return []
    pool: list[Candidate] = []
    for memory_type in config.pinned_types:
        memories, _ = repo.list(ListQuery(
            types=(memory_type,), agent_id=agent_id, sort=config.pinned_sort,
            page_size=config.pinned_limit if agent_id else config.pinned_limit * 4,
        ))
        visible = [m for m in memories if m.visible_to(agent_id)][: config.pinned_limit]
        pool.extend(_pinned(m, retriever, repo, query) for m in visible)
    return pool


def _pinned(memory: Memory, retriever: Retriever, repo: MemoryRepo,
            query: np.ndarray) -> Candidate:
    embedding = retriever.embedding_of(memory.id)
    if embedding is None:
        embedding = repo.embedding(memory.id)
    assert embedding is not None
    return Candidate(memory=memory, section=Section.PINNED, score=0.0,
                     cosine=float(embedding @ query), embedding=embedding)


def contextual_pool(config: MemoryInjectionConfig, agent_id: str, text: str, query: np.ndarray,
                    retriever: Retriever) -> tuple[list[Candidate], int, dict[str, int]]:
    """Search hits whose cosine to the text is at least ``contextual_min_score``.

    Returns the candidates (in fused-score order), how many fell below the floor, and the
    retriever's stage timings.
    """
    if config.search_limit <= 0:
        return [], 0, {}
    result = retriever.search(SearchQuery(
        text=text, agent_id=agent_id, limit=config.search_limit,
        search_limit=config.search_limit, embedding=query,
    ))
    pool: list[Candidate] = []
    below = 0
    for hit in result.hits:
        if hit.cosine < config.contextual_min_score:
            below += 1
            continue
        embedding = retriever.embedding_of(hit.memory.id)
        if embedding is None:  # forgotten between search and now
            continue
        pool.append(Candidate(memory=hit.memory, section=Section.CONTEXTUAL, score=hit.score,
                              cosine=hit.cosine, embedding=embedding))
    return pool, below, result.timings_us
