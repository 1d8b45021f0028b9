"""What Inject takes and returns, in domain terms (no protobuf)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from sidecar.records import Memory
from sidecar.retrieval.contract import SourceRank

SYSTEM_SOURCE = "system"


class Section(IntEnum):
    PINNED = 1
    CONTEXTUAL = 2


@dataclass(frozen=True, slots=True)
class InjectRequest:
    agent_id: str
    channel_id: str
    text: str
    source: str = ""
    turn: int = 0  # 0 = the server counts turns per channel
    user_id: str = ""  # the end user who wrote the turn ('' = not known)


@dataclass(frozen=True, slots=True)
class Candidate:
    memory: Memory
    section: Section
    score: float  # fused retrieval score (0 for pinned)
    cosine: float  # turn text vs memory
    embedding: np.ndarray
    is_update: bool = False  # in cooldown but changed since it was injected
    ranks: tuple[SourceRank, ...] = ()  # per source (contextual: from the search hit)


@dataclass(frozen=True, slots=True)
class InjectedItem:
    memory: Memory
    section: Section
    content: str  # single-line, neutralised, as written in the block
    score: float
    cosine: float
    is_update: bool


@dataclass(slots=True)
class InjectStats:
    candidates: int = 0
    below_min_score: int = 0
    deduped_by_id: int = 0
    deduped_semantic: int = 0
    dropped_by_budget: int = 0
    pinned_count: int = 0
    contextual_count: int = 0
    block_tokens: int = 0
    elapsed_us: int = 0
    stages_us: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Injection:
    block: str
    items: list[InjectedItem]
    stats: InjectStats
    skip_reason: str
    turn: int


class Abandoned(Exception):
    """The caller went away (deadline passed, cancelled) before the turn was committed."""
