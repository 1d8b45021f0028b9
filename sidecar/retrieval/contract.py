"""What a retrieval engine takes and returns. Used by Search and by Inject."""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, Protocol

import numpy as np

from sidecar.records import Memory, MemoryType, Relation, Viewer

# Vectorised filter: takes an int64 array of labels, returns a bool mask of accepted ones.
Accept = Callable[[np.ndarray], np.ndarray]
# Texts with a weight each: their terms count weight x as much as the query's own in BM25.
Weighted = Sequence[tuple[str, float]]


class Place(NamedTuple):
    """Where a memory was written: its writer (agent, end user, source, channel) and its
    position in that writer's sequence of writes (``sidecar.retrieval.writers``: what other
    writers wrote in between does not count). Memories of one writer at near positions were written
    together: the parts of one document, the turns of one session."""

    writer: tuple[str, str, str, str]
    position: int


class Mode(Enum):
    HYBRID = "hybrid"
    VECTOR = "vector"
    LEXICAL = "lexical"

    def uses(self, source: str) -> bool:
        """HYBRID runs every source; VECTOR and LEXICAL only the source of that name."""
        return self is Mode.HYBRID or self.value == source


@dataclass(frozen=True, slots=True)
class SearchQuery:
    text: str
    agent_id: str = ""  # sees shared memories + its own general knowledge
    limit: int = 10
    types: tuple[MemoryType, ...] = ()
    mode: Mode = Mode.HYBRID
    search_limit: int = 20  # candidates per source before fusion
    embedding: np.ndarray | None = None  # precomputed query embedding, if the caller has it
    # A conversation's recent turns steering a follow-up (``sidecar.conversation.query_context``;
    # Search never sets them): ``context`` is added to the text's unit embedding before the
    # vector search (then normalised), ``context_texts`` are BM25 terms at their weights
    # (``BM25Index.with_context``).
    context: np.ndarray | None = None
    context_texts: tuple[tuple[str, float], ...] = ()
    # Private memories it may see too (``Memory.offered_to``): the end user's, the channel's.
    user_id: str = ""
    channel_id: str = ""
    shared_channel: bool = False  # several users spoke in the channel: no user's memories

    @property
    def viewer(self) -> Viewer:
        return Viewer(self.agent_id, self.user_id, self.channel_id, self.shared_channel)


class SourceRank(NamedTuple):
    """Where one source ranked a hit, and that source's weight in the fusion (a named tuple:
    a search builds one per hit and source)."""

    name: str  # "vector", "lexical", "graph", ... (``sidecar.retrieval.stages``)
    rank: int  # 1-based; 0 = absent from that source's list
    weight: float


@dataclass(frozen=True, slots=True)
class Hit:
    memory: Memory
    score: float  # fused score
    cosine: float  # query-memory cosine (thresholdable)
    ranks: tuple[SourceRank, ...] = ()  # one per source, in the engine's source order
    # The memory's stored embedding (None if it changed meanwhile: ask ``embedding_of``).
    embedding: np.ndarray | None = field(default=None, compare=False, repr=False)

    def rank(self, source: str) -> int:
        """The hit's rank in ``source``'s list (0 when absent or no such source)."""
        return next((r.rank for r in self.ranks if r.name == source), 0)


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    query_embedding: np.ndarray  # what the search ranked by (steered by ``context`` if any)
    text_embedding: np.ndarray  # the text's own embedding
    timings_us: dict[str, int] = field(default_factory=dict)  # keys: sidecar.retrieval.stages
    # With a context: the BM25 score of every accepted label the query's and its context's
    # terms match (labels ascending), else None.
    lexical: tuple[np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True, slots=True)
class QueryEmbedding:
    """A query's embedding still to be computed (``Retriever.query_embedding``): ``run()``
    computes it; ``alone``: it runs on every core, so work meant to overlap it should wait
    for it instead; ``model``: the model it comes from."""

    run: Callable[[], np.ndarray]
    alone: bool
    model: object


@dataclass(frozen=True, slots=True)
class Ahead:
    """The part of a search that needs no query embedding, done before it
    (``Retriever.ahead``); ``Retriever.finish`` completes it with the embedding.
    ``engine``: the engine's own record of it."""

    query: SearchQuery
    engine: object


def cosine_of(dot: float) -> float:
    """A cosine as reported (hits, injected items, logs): the dot product of two unit
    vectors, kept in [-1, 1]. Rounding in float32 puts a text's cosine to itself (and to a
    near twin) a few units of the last place above 1 (1.0000001). NaN (no row) stays NaN."""
    value = float(dot)
    if value > 1.0:
        return 1.0
    return -1.0 if value < -1.0 else value


def steered(text: np.ndarray, context: np.ndarray | None) -> np.ndarray:
    """The unit vector of ``text + context`` (``text`` itself without a context)."""
    if context is None:
        return text
    mixed = text + context.astype(text.dtype, copy=False)
    norm = float(np.linalg.norm(mixed))
    return mixed / norm if norm > 0 else text


class Retriever(Protocol):
    def search(self, query: SearchQuery) -> SearchResult: ...

    def prefetch(self, viewer: Viewer) -> int:
        """Start loading the scopes a call for ``viewer`` reads that are not held (scopes on
        demand), on threads of their own, and return at once (how many): the call's search
        then finds them held or waits for those loads, never loads one twice."""
        ...

    def query_embedding(self, text: str) -> QueryEmbedding:
        """The embedding ``search`` would compute for ``text``, to compute (e.g. on another
        thread, beside ``ahead``)."""
        ...

    def ahead(self, query: SearchQuery) -> Ahead:
        """What ``search(query)`` does before it needs the query embedding (the scope
        filter, the lexical list), done now."""
        ...

    def finish(self, ahead: Ahead, embedding: np.ndarray,
               model: object | None = None) -> SearchResult:
        """``search`` of ``ahead.query`` with ``embedding`` as its text's embedding (from
        ``model``, ``QueryEmbedding.model``): the same result, without the work ``ahead``
        did."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """The embedding ``search`` would compute for ``text``."""
        ...

    def changes(self) -> object | None:
        """A token equal at two moments only if nothing a search reads changed between
        them (a memory stored, changed, forgotten or erased, a scope loaded or evicted, an
        edge, the model, the config): the same search then finds the same. None while a
        change is under way."""
        ...

    def query_terms(self, text: str) -> tuple[str, ...]:
        """The BM25 terms ``search`` would look up for ``text`` (stop words dropped), each
        once; memoised, so a text analysed here costs nothing as a query context later."""
        ...

    def embedding_of(self, memory_id: str) -> np.ndarray | None:
        """The stored embedding of a live memory (for semantic dedup)."""
        ...

    def live_memories(self, memory_ids: Sequence[str], viewer: Viewer) -> list[Memory | None]:
        """Each memory as it is now (None: not live or not offered to ``viewer``)."""
        ...

    def places(self, memory_ids: Sequence[str], viewer: Viewer) -> list[Place | None]:
        """Where each memory was written (None: not live or not offered to ``viewer``)."""
        ...

    def neighbourhood(self, memory_ids: Sequence[str], radius: int,
                      viewer: Viewer) -> list[Memory]:
        """The live memories offered to ``viewer`` written within ``radius`` places
        (``Place``: positions in the writer's own sequence, counting live memories only) of
        one of ``memory_ids`` by its writer, those of them live and visible included, each
        once, in store order."""
        ...

    def embeddings_at(self, seqs: np.ndarray) -> np.ndarray:
        """The stored embeddings of the live memories of these ``Memory.seq`` (n, dim); a
        row of nan where none is live."""
        ...

    def term_scores(self, memory_ids: Sequence[str], texts: Weighted) -> np.ndarray:
        """BM25 of each memory (0: not live) for the terms of ``texts``, each term once at
        its largest weight."""
        ...

    def term_search(self, texts: Weighted, k: int, viewer: Viewer) -> list[str]:
        """The ``k`` live memories offered to ``viewer`` that BM25 scores best for the
        terms of ``texts`` (as ``term_scores``), best first."""
        ...

    def term_search_within(self, texts: Weighted, k: int, viewer: Viewer,
                           postings: int) -> list[str]:
        """``term_search`` by the rarest of its terms while their postings (memories holding
        them) add up to at most ``postings`` (``lexical.held.rare_search``): bounded work
        whatever the store's size; ``term_search`` itself when all of them fit."""
        ...

    def held_scores(self, memory_ids: Sequence[str], terms: Collection[str],
                    texts: Weighted) -> tuple[np.ndarray, np.ndarray]:
        """Per memory, how many of the BM25 query ``terms`` (distinct) its text holds, read
        from the index (-1: not indexed), and its ``term_scores`` for ``texts``."""
        ...

    def similarity_background(self, query: np.ndarray) -> tuple[float, float, int]:
        """(mean, standard deviation) of the query's cosine to every stored memory, and
        their number."""
        ...

    def members(self, viewer: Viewer, memory_type: MemoryType) -> list[tuple[Memory, bool]]:
        """Every live memory of ``memory_type`` offered to ``viewer`` (from memory, not the
        store), with whether it is established (given to an agent, read, or edited)."""
        ...

    def established(self, memory_ids: Sequence[str]) -> None:
        """These memories were just given to an agent."""
        ...

    def pointing_to(self, memory_ids: Sequence[str],
                    relations: Container[Relation]) -> list[tuple[Memory, str]]:
        """(live source memory, target id) of every edge of ``relations`` into
        ``memory_ids``, from memory (no SQL)."""
        ...
