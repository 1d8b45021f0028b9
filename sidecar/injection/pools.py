"""The two candidate pools: pinned memories by type, contextual memories by search."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sidecar.capture.modes import CAPTURE_SOURCE, OFF
from sidecar.conversation.query_context import NONE as NO_CONTEXT
from sidecar.conversation.query_context import QueryContext
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.floor import Floor, passes
from sidecar.injection.pinned import pinned_of_type
from sidecar.injection.types import Candidate, Section
from sidecar.records import Memory, Viewer
from sidecar.retrieval import stages
from sidecar.retrieval.contract import (
    Ahead,
    Hit,
    Retriever,
    SearchQuery,
    cosine_of,
    steered,
)
from sidecar.store.memories import MemoryRepo
from sidecar.timing import timed

# How much deeper a turn is searched while capture is on (captured hits: see contextual_pool).
CAPTURE_WIDEN = 2
# The vault's always-injected memories of an agent (canon, then active registers).
SnapshotSource = Callable[[str], Sequence[Memory]]


def pinned_pool(config: MemoryInjectionConfig, viewer: Viewer, repo: MemoryRepo,
                retriever: Retriever, query: np.ndarray,
                snapshot: SnapshotSource | None = None,
                members: Sequence[Memory] | None = None) -> list[Candidate]:
    """The pinned section (ambient only): ``pinned_members`` (or ``members``, which it
    returned earlier) with their cosines to ``query``."""
    chosen = (pinned_members(config, viewer, retriever, snapshot) if members is None
              else members)
    return [_pinned(m, retriever, repo, query) for m in chosen]


def pinned_members(config: MemoryInjectionConfig, viewer: Viewer, retriever: Retriever,
                   snapshot: SnapshotSource | None = None) -> list[Memory]:
    """The memories of the pinned section (no query needed).

    ``pinned_source = "types"``: per pinned type, the first ``pinned_limit`` memories in the
    order of ``sidecar.injection.pinned``. ``"snapshot"``: the first ``pinned_limit``
    memories of the vault snapshot, in snapshot order.
    """
    if not config.ambient_enabled or config.pinned_limit <= 0:
        return []
    if config.pinned_source == "snapshot":
        return [] if snapshot is None else list(snapshot(viewer.agent_id))[: config.pinned_limit]
    return [m for memory_type in config.pinned_types
            for m in pinned_of_type(retriever.members(viewer, memory_type),
                                    config.pinned_sort, config.pinned_limit)]


def _pinned(memory: Memory, retriever: Retriever, repo: MemoryRepo,
            query: np.ndarray) -> Candidate:
    embedding = retriever.embedding_of(memory.id)
    if embedding is None:
        embedding = repo.embedding(memory.id)
    assert embedding is not None
    return Candidate(memory=memory, section=Section.PINNED, score=0.0,
                     cosine=cosine_of(embedding @ query), embedding=embedding)


@dataclass(slots=True)
class ContextualPool:
    candidates: list[Candidate]  # in fused-score order
    below_min_score: int  # hits under the cosine floor
    query: np.ndarray  # what the search ranked by: the text's embedding, steered by a context
    text: np.ndarray  # the text's own embedding (kept as the context of later turns)
    embed_us: int  # of which the embedding
    floored: list[Hit] = field(default_factory=list)  # the hits under the floor
    lexical: tuple[np.ndarray, np.ndarray] | None = None  # SearchResult.lexical
    said: int = 0  # of the candidates, the captured turns (the last ones)

    @property
    def answers(self) -> list[Candidate]:
        """The candidates that are not captured turns."""
        return self.candidates[:len(self.candidates) - self.said]

    @property
    def captured(self) -> list[Candidate]:
        return self.candidates[len(self.candidates) - self.said:]


def contextual_pool(config: MemoryInjectionConfig, viewer: Viewer, text: str,
                    retriever: Retriever, context: QueryContext = NO_CONTEXT,
                    embedding: np.ndarray | None = None, ahead: Ahead | None = None,
                    model: object | None = None) -> ContextualPool:
    """Search hits that clear the relevance floor (``sidecar.injection.floor``) of a turn
    for ``viewer`` (in its channel); ``context`` steers the search with the conversation
    (``sidecar.conversation.query_context``): the floors then measure cosines to the steered
    query. Captured turns (``CAPTURE_SOURCE``) are evidence of what was said, not answers:
    they are floored among themselves and come after every other hit (``said`` counts
    them); while capture is on the search looks ``CAPTURE_WIDEN`` x as deep, so that
    captured questions like the turn's do not crowd its answers out of the candidates.

    The search embeds the text itself (overlapping its lexical half with the model) unless
    given its ``embedding`` (from ``model``); with ``ahead`` (``contextual_ahead`` of the
    same turn and context) it only finishes that search. With the contextual pool off
    (``search_limit = 0``) the text is only embedded, the same way.
    """
    if config.search_limit <= 0:
        embedded, embed_us = ((embedding, 0) if embedding is not None
                              else timed(retriever.embed_query, text))
        return ContextualPool([], 0, steered(embedded, context.vector), embedded, embed_us)
    if ahead is not None:
        assert embedding is not None
        result = retriever.finish(ahead, embedding, model)
    else:
        result = retriever.search(contextual_query(config, viewer, text, context, embedding))
    pool: list[Candidate] = []
    floored: list[Hit] = []
    said = 0
    floor = Floor(config.contextual_min_score, config.relative_floor, config.score_floor,
                  config.background_floor, config.own_channel_boost)
    background = (retriever.similarity_background(result.query_embedding)
                  if floor.background > 0 else (0.0, 0.0, 0))
    answers = [h for h in result.hits if h.memory.source != CAPTURE_SOURCE]
    captured = [h for h in result.hits if h.memory.source == CAPTURE_SOURCE]
    answers = answers[:config.search_limit]
    kept = [keep for hits in (answers, captured) for keep in passes(
        hits, floor, background,
        own_channel(hits, viewer.channel_id) if floor.own_channel > 0 else [])]
    for hit, keep in zip(answers + captured, kept, strict=True):
        if not keep:
            floored.append(hit)
            continue
        embedding = hit.embedding
        if embedding is None:  # changed between fusion and reading its row
            embedding = retriever.embedding_of(hit.memory.id)
        if embedding is None:  # forgotten between search and now
            continue
        pool.append(Candidate(memory=hit.memory, section=Section.CONTEXTUAL, score=hit.score,
                              cosine=hit.cosine, embedding=embedding, ranks=hit.ranks))
        said += hit.memory.source == CAPTURE_SOURCE
    embed_us = result.timings_us.get(stages.EMBED, 0)
    return ContextualPool(pool, len(floored), result.query_embedding, result.text_embedding,
                          embed_us, floored, result.lexical, said)


def contextual_query(config: MemoryInjectionConfig, viewer: Viewer, text: str,
                     context: QueryContext = NO_CONTEXT,
                     embedding: np.ndarray | None = None) -> SearchQuery:
    """The search of ``contextual_pool``."""
    deep = config.search_limit * (CAPTURE_WIDEN if config.capture != OFF else 1)
    return SearchQuery(
        text=text, agent_id=viewer.agent_id, limit=deep, search_limit=deep,
        context=context.vector, context_texts=context.texts, embedding=embedding,
        user_id=viewer.user_id, channel_id=viewer.channel_id,
        shared_channel=viewer.shared_channel,
    )


def contextual_ahead(config: MemoryInjectionConfig, viewer: Viewer, text: str,
                     retriever: Retriever, context: QueryContext = NO_CONTEXT,
                     ) -> Ahead | None:
    """What the search of ``contextual_pool`` does before the text's embedding (None: it
    does no search)."""
    if config.search_limit <= 0:
        return None
    return retriever.ahead(contextual_query(config, viewer, text, context))


def own_channel(hits: Sequence[Hit], channel_id: str) -> list[bool]:
    """Per hit, written in ``channel_id`` (a memory with no channel is of none)."""
    return [bool(channel_id) and h.memory.channel_id == channel_id for h in hits]
