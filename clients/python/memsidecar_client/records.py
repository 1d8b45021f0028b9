"""Memories from plain dicts and JSON Lines files, without building protobufs by hand."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memsidecar.v1 import memory_pb2, store_pb2

from memsidecar_client.messages import memory_type

STRING_KEYS = ("id", "content", "agent_id", "channel_id", "source", "topic_id", "user_id")
# The server-owned fields an exported line carries; a line with any of them restores them.
RESTORE_KEYS = ("version", "created_at", "updated_at", "forgotten")
KEYS = frozenset((*STRING_KEYS, "type", "importance", "tier", "channel_private",
                  *RESTORE_KEYS))


def tier(value: str | int) -> memory_pb2.Tier.ValueType:
    """"canon" / "REGISTER" / "TIER_LOG" / memory_pb2.TIER_LOG -> the enum value."""
    if isinstance(value, int):
        return memory_pb2.Tier.ValueType(value)
    name = value.upper()
    try:
        return memory_pb2.Tier.Value(name if name.startswith("TIER_") else "TIER_" + name)
    except ValueError:
        raise ValueError(f"unknown tier {value!r}; expected canon, register or log") from None


def memory_from_dict(record: Mapping[str, Any]) -> memory_pb2.Memory:
    """A Memory from ``{"content": ..., "type": "decision", "importance": 0.9, ...}``."""
    unknown = set(record) - KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(KEYS)}")
    memory = memory_pb2.Memory(**{k: str(record[k]) for k in STRING_KEYS if k in record})
    memory.type = memory_type(record.get("type", "fact"))
    if record.get("tier") is not None:
        memory.tier = tier(record["tier"])
    if record.get("importance") is not None:
        memory.importance = float(record["importance"])
    if record.get("version") is not None:
        memory.version = int(record["version"])
    for key in ("created_at", "updated_at"):
        if record.get(key):
            getattr(memory, key).FromJsonString(str(record[key]))
    memory.forgotten = flag(record, "forgotten")
    memory.channel_private = flag(record, "channel_private")
    return memory


def flag(record: Mapping[str, Any], key: str) -> bool:
    """``record[key]`` when it is true or false; False when absent or null."""
    value = record.get(key)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return bool(value)


def item_from_dict(record: Mapping[str, Any]) -> store_pb2.ImportItem:
    """An ImportItem; a record with any of ``RESTORE_KEYS`` (an exported line) restores them."""
    return store_pb2.ImportItem(memory=memory_from_dict(record),
                                restore=any(k in record for k in RESTORE_KEYS))


def memory_to_dict(memory: memory_pb2.Memory) -> dict[str, Any]:
    """An exported line: every field that makes the memory what it is, names in lower case
    ("decision", "canon"), times in RFC 3339; ``item_from_dict`` restores it exactly."""
    record: dict[str, Any] = {k: getattr(memory, k) for k in ("id", "content")}
    record["type"] = type_label(memory.type)
    record["importance"] = short_float32(memory.importance)
    record["tier"] = memory_pb2.Tier.Name(memory.tier or memory_pb2.TIER_CANON) \
        .removeprefix("TIER_").lower()
    record.update({k: getattr(memory, k) for k in STRING_KEYS[2:]})
    record["version"] = memory.version
    record["created_at"] = memory.created_at.ToJsonString()
    record["updated_at"] = memory.updated_at.ToJsonString()
    record["forgotten"] = memory.forgotten
    record["channel_private"] = memory.channel_private
    return record


def type_label(value: int) -> str:
    """memory_pb2.MEMORY_TYPE_DECISION -> "decision"."""
    return memory_pb2.MemoryType.Name(value).removeprefix("MEMORY_TYPE_").lower()


def short_float32(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (0.8, not 0.800000011920929)."""
    for digits in range(1, 10):
        short = float(f"{value:.{digits}g}")
        if struct.unpack("f", struct.pack("f", short))[0] == value:
            return short
    return value


def read_jsonl(path: str | Path) -> list[memory_pb2.Memory]:
    """One memory per non-blank line; a bad line raises ValueError naming its number."""
    return [item.memory for item in read_items(path)]


def read_items(path: str | Path) -> list[store_pb2.ImportItem]:
    """One ImportItem per non-blank line; a bad line raises ValueError naming its number."""
    items = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                items.append(item_from_dict(parse_line(line)))
            except ValueError as err:
                raise ValueError(f"{path}:{number}: {err}") from None
    return items


def parse_line(line: str) -> dict[str, Any]:
    """One JSON object; ValueError otherwise."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(record, dict):
        raise ValueError("expected a JSON object")
    return record
