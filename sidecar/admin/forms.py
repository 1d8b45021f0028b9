"""Reading the pages' filter parameters: names from the request to domain values."""

from __future__ import annotations

from sidecar.admin.html import ident
from sidecar.errors import InvalidArgument
from sidecar.records import Memory, MemoryType, Tier

TYPES = tuple(t.label for t in MemoryType)
TIERS = tuple(t.name.lower() for t in Tier)


def memory_type(value: str) -> MemoryType | None:
    if not value:
        return None
    if value not in TYPES:
        raise InvalidArgument(f"type must be one of {', '.join(TYPES)}", field="type")
    return MemoryType.from_label(value)


def tier(value: str) -> Tier | None:
    if not value:
        return None
    if value not in TIERS:
        raise InvalidArgument(f"tier must be one of {', '.join(TIERS)}", field="tier")
    return Tier[value.upper()]


def scope(memory: Memory) -> str:
    """Whose memory it is, as HTML: the agent (or "(shared)"), and its end user or channel."""
    owner = ident(memory.agent_id) if memory.agent_id else "(shared)"
    if memory.user_id:
        return f"{owner} · user {ident(memory.user_id)}"
    return f"{owner} · this channel only" if memory.channel_private else owner
