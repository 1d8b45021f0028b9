"""Synthetic memories of a fleet (users of agents, plus shared ones) from real text.

Every text is a window of one to three consecutive sentences of a CoQA story (real vocabulary
and sentence shapes for BM25); its vector is the sum of the model's embeddings of those
sentences (embedded once per pool and cached), plus a little noise, made unit-norm. Each
user, each agent's general knowledge and the shared scope draw their texts from a few
stories of their own (more for a larger scope: each text once in its scope), so a scope's
vectors cluster and a question about one of its stories finds its memories. The bench
(``bench/fleet_serve.py``) asks the users the CoQA questions of their stories.

Memories are generated in time order (``created_at`` spread over ``days`` before a fixed
end), each owned by a user (most: captured turns, or memories the agent wrote), an agent's
general knowledge or the shared scope; a user's memory links to a few earlier ones of the
same story (edges). Everything follows from the seed: the same arguments, the same store.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.conversation_followups import load
from sidecar.capture.modes import capture_id
from sidecar.embedding import Embedder
from sidecar.records import CAPTURE_SOURCE, DEFAULT_IMPORTANCE, Edge, Memory, MemoryType, Relation

END_US = 1_790_000_000_000_000  # 2026-09-21: the newest memory's time (fixed: reproducible)
DAY_US = 86_400_000_000
NOISE = 0.15  # norm of the noise added to a window's unit vector (cosine to it ~0.99)
WINDOW_P = (0.5, 0.3, 0.2)  # a text of 1, 2 or 3 sentences
CAPTURED = 0.6  # share of a user's memories that are captured turns (one sentence each)
CHANNELS_PER_USER = 3
WRITTEN_TYPES = (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.EVENT,
                 MemoryType.DECISION, MemoryType.GOAL, MemoryType.TODO)
WRITTEN_P = (0.45, 0.2, 0.15, 0.1, 0.05, 0.05)
RELATIONS = (Relation.RELATED_TO, Relation.PART_OF, Relation.UPDATES, Relation.CAUSED_BY)
RELATIONS_P = (0.75, 0.12, 0.03, 0.1)  # UPDATES supersedes its target: rare
TEXTS_PER_STORY = 15  # a scope draws from one more story per this many of its memories
TRIES = 20  # draws of a window the scope has no memory of (then one it has is taken)
LINK_WINDOW = 8  # an edge goes to one of the last memories of the scope's same story
BATCH = 20_000


@dataclass(frozen=True, slots=True)
class Fleet:
    """What a store holds: ``memories`` in all, ``shared`` of them shared, ``per_agent`` of
    each agent's general knowledge, the rest spread unevenly over the users (user ``u``
    talks to agent ``u % agents``)."""

    memories: int
    users: int
    agents: int
    shared: int = 300
    per_agent: int = 50
    stories_per_user: int = 3
    edges_per_memory: float = 1.5
    days: int = 180
    seed: int = 7
    stories: int = 0  # texts from the first this many CoQA stories (0: all)

    def check(self) -> None:
        if min(self.users, self.agents) < 1:
            raise ValueError("--users and --agents must be at least 1")
        if self.memories < self.shared + self.per_agent * self.agents + self.users:
            raise ValueError(
                f"--memories {self.memories} is too few for {self.shared} shared, "
                f"{self.per_agent} per agent and one per user; raise it or lower --shared "
                "and --per-agent")

    def agent_of(self, user: int) -> str:
        return f"agent-{user % self.agents}"


@dataclass(frozen=True)
class Pool:
    """Sentences of the stories in order, with one unit vector each, and each story's
    questions."""

    sentences: list[str]
    starts: np.ndarray  # int64 (stories + 1): story s is sentences[starts[s]:starts[s + 1]]
    vectors: np.ndarray  # float32 (sentences, dim)
    questions: list[tuple[str, ...]]
    cumulative: np.ndarray = field(init=False)  # vectors' running sums, a zero row first

    def __post_init__(self) -> None:
        sums = np.zeros((len(self.vectors) + 1, self.vectors.shape[1]), np.float64)
        np.cumsum(self.vectors, axis=0, out=sums[1:])
        object.__setattr__(self, "cumulative", sums)

    @property
    def stories(self) -> int:
        return len(self.starts) - 1


def load_pool(data: Path, embedder: Embedder, cache: Path, stories: int = 0) -> Pool:
    """The sentences and questions of the first ``stories`` CoQA stories of ``data`` (0: all),
    their vectors by ``embedder`` cached in ``cache``."""
    conversations = load(data)[:stories or None]
    texts = [c.texts for c in conversations if c.texts]
    sentences = [t for story in texts for t in story]
    starts = np.cumsum([0, *map(len, texts)]).astype(np.int64)
    key = hashlib.sha256("\n".join([embedder.name, *sentences]).encode()).hexdigest()[:16]
    path = cache / f"fleet_pool_{key}.npy"
    if path.exists():
        vectors = np.load(path)
    else:
        vectors = embedder.embed(sentences).astype(np.float32)
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    questions = [tuple(t.question for t in c.turns) for c in conversations if c.texts]
    return Pool(sentences, starts, vectors, questions)


def owners(fleet: Fleet) -> np.ndarray:
    """The owning scope of each memory in time order (users 0..U-1, agents U..U+A-1, then
    shared): the users' counts uneven (log-normal weights), every user at least one."""
    rng = np.random.default_rng([fleet.seed, 2])
    spare = fleet.memories - fleet.shared - fleet.per_agent * fleet.agents - fleet.users
    weights = rng.lognormal(0.0, 0.6, fleet.users)
    counts = 1 + rng.multinomial(spare, weights / weights.sum())
    counts = np.concatenate([counts, np.full(fleet.agents, fleet.per_agent), [fleet.shared]])
    return rng.permutation(np.repeat(np.arange(len(counts)), counts))


def scope_stories(fleet: Fleet, pool: Pool, owner_of: np.ndarray) -> list[np.ndarray]:
    """The stories each scope draws from: at least ``stories_per_user``, one more per
    ``TEXTS_PER_STORY`` of its memories (room for a text of its own each)."""
    rng = np.random.default_rng([fleet.seed, 1])
    counts = np.bincount(owner_of, minlength=fleet.users + fleet.agents + 1)
    wanted = np.clip(-(-counts // TEXTS_PER_STORY), fleet.stories_per_user, pool.stories)
    return [rng.choice(pool.stories, int(k), replace=False) for k in wanted]


@dataclass(frozen=True)
class Draws:
    """The random choices of a batch of ``n`` memories, drawn at once (row i: memory i)."""

    captured: np.ndarray  # a captured turn (users' memories only)
    kind: np.ndarray  # index into WRITTEN_TYPES
    length: np.ndarray  # sentences in the text (1 for a captured turn)
    story: np.ndarray  # [0, 1): which of the scope's stories
    first: np.ndarray  # [0, 1): where in the story the text starts
    channel: np.ndarray  # which of the user's channels a turn was captured in
    id_bits: np.ndarray  # the random half of the memory's id
    links: np.ndarray  # edges to earlier memories
    order: np.ndarray  # (n, LINK_WINDOW): the earlier memories in the order they are linked
    relation: np.ndarray  # (n, LINK_WINDOW): index into RELATIONS per edge
    weight: np.ndarray  # (n, LINK_WINDOW)

    @classmethod
    def of(cls, fleet: Fleet, rng: np.random.Generator, owner: np.ndarray) -> Draws:
        n, wide = len(owner), (len(owner), LINK_WINDOW)
        captured = (owner < fleet.users) & (rng.random(n) < CAPTURED)
        return cls(captured, rng.choice(len(WRITTEN_TYPES), n, p=WRITTEN_P),
                   np.where(captured, 1, rng.choice(3, n, p=WINDOW_P) + 1), rng.random(n),
                   rng.random(n), rng.integers(0, CHANNELS_PER_USER, n),
                   rng.integers(0, 2**63, n), rng.poisson(fleet.edges_per_memory, n),
                   rng.random(wide).argsort(axis=1), rng.choice(len(RELATIONS), wide,
                                                                p=RELATIONS_P),
                   np.round(rng.uniform(0.3, 0.9, wide), 2))


def generate(fleet: Fleet, pool: Pool) -> Iterator[tuple[list[Memory], np.ndarray, list[Edge]]]:
    """The store's memories in time order, in batches: (memories, their unit vectors, the
    edges from them to earlier memories)."""
    fleet.check()
    owner_of = owners(fleet)
    stories = scope_stories(fleet, pool, owner_of)
    rng = np.random.default_rng([fleet.seed, 3])
    start_us = END_US - fleet.days * DAY_US
    times = np.sort(rng.integers(start_us, END_US, fleet.memories)).tolist()
    used: list[set[tuple[int, int]]] = [set() for _ in stories]  # (first sentence, length)
    recent: dict[tuple[int, int], list[str]] = {}
    for at in range(0, fleet.memories, BATCH):
        owner = owner_of[at:at + BATCH]
        draws = Draws.of(fleet, rng, owner)
        memories, edges = [], []
        windows = np.zeros((len(owner), 2), np.int64)
        for i, scope in enumerate(owner.tolist()):
            story, windows[i] = _window(pool, rng, stories[scope], used[scope], draws, i)
            memory = _memory(fleet, pool, scope, draws, i, windows[i], times[at + i])
            memories.append(memory)
            if scope < fleet.users:
                edges += _links(memory, recent.setdefault((scope, story), []), draws, i)
        yield memories, _vectors(pool, rng, windows), edges


def _window(pool: Pool, rng: np.random.Generator, stories: np.ndarray,
            used: set[tuple[int, int]], draws: Draws, i: int) -> tuple[int, np.ndarray]:
    """A story of the scope and a window of it (first sentence, length) the scope has no
    memory of yet, when one is found in ``TRIES`` draws (the batch's first, then more)."""
    pick, place = float(draws.story[i]), float(draws.first[i])
    for _ in range(TRIES):
        story = int(stories[int(pick * len(stories))])
        size = int(pool.starts[story + 1] - pool.starts[story])
        first = int(place * size)
        window = (int(pool.starts[story]) + first, min(int(draws.length[i]), size - first))
        if window not in used:
            break
        pick, place = rng.random(2).tolist()
    used.add(window)
    return story, np.array(window)


def _vectors(pool: Pool, rng: np.random.Generator, windows: np.ndarray) -> np.ndarray:
    """Unit vectors of the windows: their sentences' summed vectors, unit, plus noise."""
    begin, length = windows[:, 0], windows[:, 1]
    sums = pool.cumulative[begin + length] - pool.cumulative[begin]
    noise = rng.standard_normal(sums.shape)
    noise *= NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = sums / np.linalg.norm(sums, axis=1, keepdims=True) + noise
    unit: np.ndarray = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    return unit.astype(np.float32)


def _memory(fleet: Fleet, pool: Pool, owner: int, draws: Draws, i: int, window: np.ndarray,
            at_us: int) -> Memory:
    begin, length = int(window[0]), int(window[1])
    content = " ".join(pool.sentences[begin:begin + length])
    agent, user, channel, source = "", "", "", "import"
    kind = MemoryType.FACT
    captured = bool(draws.captured[i])
    if owner < fleet.users:
        agent, user = fleet.agent_of(owner), f"user-{owner}"
        kind, source = WRITTEN_TYPES[draws.kind[i]], "agent"
        if captured:
            channel = f"{user}-chat-{draws.channel[i]}"
            kind, source = MemoryType.OBSERVATION, CAPTURE_SOURCE
    elif owner < fleet.users + fleet.agents:
        agent = f"agent-{owner - fleet.users}"
    memory_id = str(uuid.UUID(int=int(draws.id_bits[i]) << 64 | at_us, version=4))
    if captured:
        memory_id = capture_id(agent, channel, memory_id)
    return Memory(id=memory_id, content=content, type=kind, importance=DEFAULT_IMPORTANCE[kind],
                  created_at=at_us, updated_at=at_us, last_accessed_at=0, access_count=0,
                  source=source, channel_id=channel, agent_id=agent, forgotten=False,
                  version=1, user_id=user)


def _links(memory: Memory, earlier: list[str], draws: Draws, i: int) -> list[Edge]:
    """A few edges from ``memory`` to the last memories of its scope's story (``earlier``,
    which it then joins)."""
    targets = [int(t) for t in draws.order[i] if t < len(earlier)][:int(draws.links[i])]
    edges = [Edge(memory.id, earlier[t], RELATIONS[draws.relation[i, k]],
                  float(draws.weight[i, k]), memory.created_at)
             for k, t in enumerate(targets)]
    earlier.append(memory.id)
    del earlier[:-LINK_WINDOW]
    return edges
