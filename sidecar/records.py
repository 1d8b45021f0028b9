"""Domain records: memories, edges and their enums. No protobuf here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar


class MemoryType(IntEnum):
    IDENTITY = 1
    GOAL = 2
    DECISION = 3
    TODO = 4
    PREFERENCE = 5
    FACT = 6
    EVENT = 7
    OBSERVATION = 8

    @property
    def label(self) -> str:
        """Lower-case name used in config files ("todo") and blocks ("Todo")."""
        return self.name.lower()

    @classmethod
    def from_label(cls, label: str) -> MemoryType:
        return cls[label.strip().upper()]


DEFAULT_IMPORTANCE: dict[MemoryType, float] = {
    MemoryType.IDENTITY: 1.0,
    MemoryType.GOAL: 0.9,
    MemoryType.DECISION: 0.8,
    MemoryType.TODO: 0.8,
    MemoryType.PREFERENCE: 0.7,
    MemoryType.FACT: 0.6,
    MemoryType.EVENT: 0.4,
    MemoryType.OBSERVATION: 0.3,
}


class Tier(IntEnum):
    CANON = 1
    REGISTER = 2
    LOG = 3


class Relation(IntEnum):
    RELATED_TO = 1
    UPDATES = 2
    CONTRADICTS = 3
    CAUSED_BY = 4
    RESULT_OF = 5
    PART_OF = 6


DEFAULT_EDGE_WEIGHT = 0.5


E = TypeVar("E", bound=IntEnum)


def member_of(kind: type[E]) -> Callable[[int], E]:
    """``kind(value)`` for a stored column: a dictionary read per row (a scope's load
    converts a few hundred), the enum's own error for a value it does not have."""
    members: dict[int, E] = {int(m): m for m in kind}

    def member(value: int) -> E:
        found = members.get(value)
        return found if found is not None else kind(value)
    return member


memory_type, tier_of, relation_of = member_of(MemoryType), member_of(Tier), member_of(Relation)

# Memory.source of every captured turn (sidecar.capture writes them; the vault and the
# store's erasure treat them apart).
CAPTURE_SOURCE = "capture"


@dataclass(frozen=True, slots=True)
class Restored:
    """The server-owned fields of a memory restored from an export, kept as given."""

    created_at: int
    updated_at: int
    version: int
    forgotten: bool


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """What a caller asks to store. ``id`` empty = new; ``importance`` None = type default;
    ``restored``: the server-owned fields to keep (an import of an exported memory)."""

    content: str
    type: MemoryType
    id: str = ""
    importance: float | None = None
    source: str = ""
    channel_id: str = ""
    agent_id: str = ""
    tier: Tier = Tier.CANON
    topic_id: str = ""
    restored: Restored | None = None
    user_id: str = ""  # the end user it belongs to ('' = none)
    channel_private: bool = False  # recalled only in ``channel_id``

    @property
    def private_key(self) -> str:
        return private_key(self.agent_id, self.user_id, self.channel_private, self.channel_id)


@dataclass(frozen=True, slots=True)
class Memory:
    """A stored memory. Timestamps are integer microseconds since the Unix epoch."""

    id: str
    content: str
    type: MemoryType
    importance: float
    created_at: int
    updated_at: int
    last_accessed_at: int
    access_count: int
    source: str
    channel_id: str
    agent_id: str
    forgotten: bool
    version: int
    tier: Tier = Tier.CANON
    topic_id: str = ""
    seq: int = 0  # dense integer key (SQLite rowid); used as the vector index label
    user_id: str = ""  # the end user it belongs to ('' = the agent's general knowledge)
    channel_private: bool = False  # recalled only in ``channel_id``

    def visible_to(self, agent_id: str) -> bool:
        """In ``agent_id``'s scope: shared or its own (its users' and channels' included).
        What an agent may read, list, forget or link; what it is offered is ``offered_to``."""
        return not self.agent_id or self.agent_id == agent_id

    @property
    def private_key(self) -> str:
        return private_key(self.agent_id, self.user_id, self.channel_private, self.channel_id)

    def offered_to(self, viewer: Viewer) -> bool:
        """Whether a search or an injection for ``viewer`` may offer this memory."""
        if self.agent_id and self.agent_id != viewer.agent_id:
            return False
        key = self.private_key
        return not key or key in viewer.private_keys


def private_key(agent_id: str, user_id: str, channel_private: bool, channel_id: str) -> str:
    """Who besides its agent a memory is private to: '' (nobody: general knowledge or
    shared), its end user, or its channel. Agent, user and channel ids hold no control
    characters, so the NUL separators make keys of different owners distinct."""
    if user_id:
        return f"u\0{agent_id}\0{user_id}"
    if channel_private:
        return f"c\0{agent_id}\0{channel_id}"
    return ""


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who a search or an injection is for, which decides what it may be offered: shared
    memories, the agent's general knowledge, the end user's own memories (not in a channel
    several users spoke in) and the memories private to the channel."""

    agent_id: str = ""
    user_id: str = ""
    channel_id: str = ""
    shared_channel: bool = False  # several users spoke in the channel: no user's memories

    @property
    def private_keys(self) -> tuple[str, ...]:
        """The ``private_key`` of the memories private to the viewer it may be offered."""
        keys = []
        if self.user_id and not self.shared_channel:
            keys.append(private_key(self.agent_id, self.user_id, False, ""))
        if self.channel_id:
            keys.append(private_key(self.agent_id, "", True, self.channel_id))
        return tuple(keys)


@dataclass(frozen=True, slots=True)
class Edge:
    source_id: str
    target_id: str
    relation: Relation
    weight: float = DEFAULT_EDGE_WEIGHT
    created_at: int = 0
