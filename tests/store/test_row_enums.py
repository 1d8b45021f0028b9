"""A stored enum column read back: ``records.member_of`` against the enum's own call."""

from __future__ import annotations

from enum import IntEnum

import pytest

from sidecar.records import MemoryType, Relation, Tier, member_of


@pytest.mark.parametrize("kind", [MemoryType, Tier, Relation])
def test_every_value_reads_back_as_the_enum_member_and_others_fail_alike(
        kind: type[IntEnum]) -> None:
    member = member_of(kind)
    for value in range(-3, max(kind) + 4):
        if value in {int(m) for m in kind}:
            got = member(value)
            assert got is kind(value) and type(got) is kind
        else:
            with pytest.raises(ValueError):
                kind(value)
            with pytest.raises(ValueError):
                member(value)
