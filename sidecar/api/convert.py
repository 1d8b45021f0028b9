"""protobuf <-> domain conversion. Domain code never sees a _pb2 message."""

from __future__ import annotations

from dataclasses import replace
from enum import IntEnum
from typing import Any, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp
from memsidecar.v1 import memory_pb2, store_pb2

from sidecar.errors import InvalidArgument
from sidecar.memory.validation import MAX_TIME_US
from sidecar.records import Edge, Memory, MemoryDraft, MemoryType, Relation, Restored, Tier
from sidecar.store.memories import ListQuery


def timestamp(us: int) -> Timestamp:
    ts = Timestamp()
    if us:
        ts.FromMicroseconds(us)
    return ts


def timestamp_fields(us: int) -> dict[str, int]:
    """``timestamp(us)`` as constructor fields (a third of the cost in a message's
    constructor, which every search hit pays three times)."""
    return {"seconds": us // 1_000_000, "nanos": us % 1_000_000 * 1000}


E = TypeVar("E", bound=IntEnum)


def _enum(cls: type[E], proto_enum: Any, value: int, field: str) -> E:
    try:
        return cls(value)
    except ValueError:
        names = ", ".join(proto_enum.Name(member) for member in cls)
        raise InvalidArgument(
            f"{field} must be one of {names} (got {value})", field=field, reason="BAD_ENUM"
        ) from None


def memory_type(value: int, field: str) -> MemoryType:
    return _enum(MemoryType, memory_pb2.MemoryType, value, field)


def relation(value: int, field: str) -> Relation:
    return _enum(Relation, memory_pb2.Relation, value, field)


def tier(value: int, field: str) -> Tier:
    if value == memory_pb2.TIER_UNSPECIFIED:
        return Tier.CANON
    return _enum(Tier, memory_pb2.Tier, value, field)


def draft_from_pb(msg: memory_pb2.Memory, prefix: str = "memory") -> MemoryDraft:
    return MemoryDraft(
        id=msg.id,
        content=msg.content,
        type=memory_type(msg.type, f"{prefix}.type"),
        importance=msg.importance if msg.HasField("importance") else None,
        source=msg.source,
        channel_id=msg.channel_id,
        agent_id=msg.agent_id,
        tier=tier(msg.tier, f"{prefix}.tier"),
        topic_id=msg.topic_id,
        user_id=msg.user_id,
        channel_private=msg.channel_private,
    )


def import_item_from_pb(item: store_pb2.ImportItem, prefix: str) -> MemoryDraft:
    """An ImportItem's draft; a restore keeps the memory's server-owned fields."""
    draft = draft_from_pb(item.memory, prefix)
    if not item.restore:
        return draft
    m = item.memory
    return replace(draft, restored=Restored(
        created_at=restored_time(m.created_at, f"{prefix}.created_at"),
        updated_at=restored_time(m.updated_at, f"{prefix}.updated_at"),
        version=m.version, forgotten=m.forgotten))


def restored_time(ts: Timestamp, field: str) -> int:
    """A Timestamp of a restore in microseconds: from 1970 to before 9999, nanos 0..999999999;
    else INVALID_ARGUMENT."""
    if not 0 <= ts.nanos < 1_000_000_000 or not 0 <= ts.seconds < MAX_TIME_US // 1_000_000:
        raise InvalidArgument(
            f"{field} must be a time from 1970-01-01 to before 9999-01-01 with nanos "
            f"0..999999999 (got seconds={ts.seconds}, nanos={ts.nanos})", field=field,
            reason="BAD_RESTORE")
    return int(ts.seconds) * 1_000_000 + int(ts.nanos) // 1000


def memory_to_pb(memory: Memory) -> memory_pb2.Memory:
    """``last_accessed_at`` is left unset while the memory was never injected (stored 0)."""
    accessed = timestamp_fields(memory.last_accessed_at) if memory.last_accessed_at else None
    return memory_pb2.Memory(
        id=memory.id,
        content=memory.content,
        type=int(memory.type),
        importance=memory.importance,
        created_at=timestamp_fields(memory.created_at),
        updated_at=timestamp_fields(memory.updated_at),
        last_accessed_at=accessed,
        access_count=memory.access_count,
        source=memory.source,
        channel_id=memory.channel_id,
        agent_id=memory.agent_id,
        forgotten=memory.forgotten,
        version=memory.version,
        tier=int(memory.tier),
        topic_id=memory.topic_id,
        user_id=memory.user_id,
        channel_private=memory.channel_private,
    )


def edge_to_pb(edge: Edge) -> memory_pb2.Edge:
    return memory_pb2.Edge(
        source_id=edge.source_id,
        target_id=edge.target_id,
        relation=int(edge.relation),
        weight=edge.weight,
        created_at=timestamp(edge.created_at),
    )


SORTS = {store_pb2.SORT_ORDER_UNSPECIFIED: "recent", store_pb2.SORT_ORDER_RECENT: "recent",
         store_pb2.SORT_ORDER_IMPORTANCE: "importance", store_pb2.SORT_ORDER_STORED: "stored"}


def list_query_from_pb(req: store_pb2.ListMemoriesRequest) -> ListQuery:
    sort = SORTS.get(req.sort)
    if sort is None:
        raise InvalidArgument(f"sort must be RECENT, IMPORTANCE or STORED (got {req.sort})",
                              field="sort")
    if req.all_agents and req.agent_id:
        raise InvalidArgument("all_agents lists every scope: leave agent_id empty, or unset "
                              "all_agents to list one agent's memories", field="agent_id")
    return ListQuery(
        types=tuple(memory_type(t, "types") for t in req.types),
        channel_id=req.channel_id,
        agent_id=req.agent_id,
        sort=sort,
        page_size=req.page_size or 100,
        page_token=req.page_token,
        include_forgotten=req.include_forgotten,
        all_agents=req.all_agents,
        user_id=req.user_id,
        source=req.source,
    )
