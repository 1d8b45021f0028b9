"""Memories from plain dicts and JSON Lines files, without building protobufs by hand."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memsidecar.v1 import memory_pb2

from memsidecar_client.messages import memory_type

STRING_KEYS = ("id", "content", "agent_id", "channel_id", "source", "topic_id")
KEYS = frozenset((*STRING_KEYS, "type", "importance", "tier"))


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
    return memory


def read_jsonl(path: str | Path) -> list[memory_pb2.Memory]:
    """One memory per non-blank line; a bad line raises ValueError naming its number."""
    memories = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("expected a JSON object")
                memories.append(memory_from_dict(record))
            except ValueError as err:
                raise ValueError(f"{path}:{number}: {err}") from None
    return memories
