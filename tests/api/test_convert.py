from __future__ import annotations

from dataclasses import replace

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from sidecar.api.convert import memory_to_pb, timestamp, timestamp_fields
from sidecar.records import Memory, MemoryType


@pytest.mark.parametrize("us", [0, 1, 999_999, 1_000_000, 1_700_000_000_123_456, -1,
                                -1_500_000, 2**53])
def test_timestamp_fields_equal_the_timestamp(us: int) -> None:
    assert Timestamp(**timestamp_fields(us)) == timestamp(us)


def test_memory_timestamps_round_trip() -> None:
    memory = Memory(id="m", content="c", type=MemoryType.FACT, importance=0.5,
                    created_at=1_700_000_000_123_456, updated_at=1_700_000_001_000_000,
                    last_accessed_at=0, access_count=0, source="", channel_id="", agent_id="",
                    forgotten=False, version=1)
    pb = memory_to_pb(memory)
    assert pb.created_at.ToMicroseconds() == memory.created_at
    assert pb.updated_at.ToMicroseconds() == memory.updated_at
    assert not pb.HasField("last_accessed_at")  # never injected: unset, not the epoch
    accessed = memory_to_pb(replace(memory, last_accessed_at=1_700_000_002_000_001))
    assert accessed.last_accessed_at.ToMicroseconds() == 1_700_000_002_000_001
