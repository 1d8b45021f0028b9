"""Capture's names: the modes, the memories' source, their ids and keys."""

from __future__ import annotations

import hashlib
import uuid

from sidecar.injection.config import CAPTURE_MODES
from sidecar.records import CAPTURE_SOURCE as CAPTURE_SOURCE  # every captured memory's source

OFF, USER, ALL = CAPTURE_MODES
USER_ROLE, ASSISTANT_ROLE = "user", "assistant"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def user_key(turn: int, at_us: int) -> str:
    """A user turn: its number, its commit time and a random part, unique to this turn. The
    number alone does not tell turns apart: a reset channel counts from 1 again, and two
    sidecars serving one channel while a shared store is away number its turns alike."""
    return f"{USER_ROLE}:{turn}:{at_us}:{uuid.uuid4().hex}"


def assistant_key(content: str) -> str:
    """An assistant reply: its text (captured once per channel, whichever history shows it)."""
    return f"{ASSISTANT_ROLE}:{_digest(content)}"


def capture_id(agent_id: str, channel_id: str, key: str) -> str:
    """The memory id of a capture: the same on every sidecar (a shared store writes it once)."""
    return f"capture-{_digest(agent_id, channel_id, key)}"
