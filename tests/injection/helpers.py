"""Helpers for injection tests over gRPC."""

from __future__ import annotations

import re

from memsidecar.v1 import injection_pb2, memory_pb2, store_pb2

from tests.conftest import Running


def put(live: Running, content: str, type_: int = memory_pb2.MEMORY_TYPE_FACT,
        **fields: object) -> memory_pb2.Memory:
    reply = live.store.UpsertMemory(store_pb2.UpsertMemoryRequest(
        memory=memory_pb2.Memory(content=content, type=type_, **fields)))  # type: ignore[arg-type]
    return reply.memory


def inject(live: Running, text: str, channel: str = "c1", turn: int = 0,
           **fields: object) -> injection_pb2.InjectResponse:
    return live.injection.Inject(injection_pb2.InjectRequest(
        channel_id=channel, text=text, turn=turn, **fields))  # type: ignore[arg-type]


def ids(reply: injection_pb2.InjectResponse) -> list[str]:
    return [item.id for item in reply.items]


def body(reply: injection_pb2.InjectResponse) -> str:
    """The block without its marker line (which must be its last line)."""
    text, marker = reply.block.rsplit("\n", 1)
    assert re.fullmatch(r"\[memsidecar:[0-9a-f]{16}\]", marker), marker
    return text
