"""Plain-Python inputs converted to protobuf: roles, memory types, history messages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

from memsidecar.v1 import block_pb2, injection_pb2, memory_pb2


def block_header(name: str) -> str:
    """The literal text of a ``BlockHeader`` value, read from block.proto's descriptors."""
    value = block_pb2.BlockHeader.DESCRIPTOR.values_by_name[name]
    return str(value.GetOptions().Extensions[block_pb2.text])


BLOCK_PREFIX = block_header("BLOCK_HEADER_CONTEXT")  # the first line of every block
ROLES = {"user": injection_pb2.ROLE_USER, "assistant": injection_pb2.ROLE_ASSISTANT,
         "system": injection_pb2.ROLE_SYSTEM, "tool": injection_pb2.ROLE_TOOL}

MessageLike: TypeAlias = injection_pb2.Message | tuple[str, str]
MemoryTypeLike: TypeAlias = str | int


def memory_type(value: MemoryTypeLike) -> memory_pb2.MemoryType.ValueType:
    """"fact" / "FACT" / "MEMORY_TYPE_FACT" / memory_pb2.MEMORY_TYPE_FACT -> the enum value."""
    if isinstance(value, int):
        return memory_pb2.MemoryType.ValueType(value)
    name = value.upper()
    if not name.startswith("MEMORY_TYPE_"):
        name = "MEMORY_TYPE_" + name
    try:
        return memory_pb2.MemoryType.Value(name)
    except ValueError:
        raise ValueError(f"unknown memory type {value!r}") from None


def message(role: str, content: str) -> injection_pb2.Message:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {sorted(ROLES)}")
    return injection_pb2.Message(role=ROLES[role], content=content)


def to_messages(history: Iterable[MessageLike]) -> list[injection_pb2.Message]:
    return [m if isinstance(m, injection_pb2.Message) else message(*m) for m in history]


def is_block(m: injection_pb2.Message) -> bool:
    """True for an injection block: a USER message starting with the block prefix."""
    return bool(m.role == injection_pb2.ROLE_USER and m.content.startswith(BLOCK_PREFIX))
