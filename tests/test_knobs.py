"""Knob metadata: restart-only keys, keeping their running values, range checks in code."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from sidecar.errors import InvalidArgument
from sidecar.knobs import check_ranges, keep_restart_keys, knob, restart_keys, unit


@dataclass(frozen=True, slots=True)
class Inner:
    size: int = field(default=4, metadata=knob("size", ge=1, restart=True))
    beam: int = field(default=8, metadata=knob("beam", ge=1))


@dataclass(frozen=True, slots=True)
class Outer:
    mode: str = field(default="a", metadata=knob("mode", choices=("a", "b")))
    tags: tuple[str, ...] = field(default=(), metadata=knob("tags", choices=("x", "y")))
    floor: float = field(default=0.5, metadata=unit("floor"))
    path: str = field(default="p", metadata=knob("path", restart=True))
    inner: Inner = field(default_factory=Inner)


def test_restart_keys_are_dotted_and_nested() -> None:
    assert list(restart_keys(Outer)) == ["path", "inner.size"]


def test_keep_restart_keys_takes_hot_values_only() -> None:
    running = Outer()
    loaded = Outer(mode="b", path="q", inner=Inner(size=9, beam=2))
    kept = keep_restart_keys(running, loaded)
    assert kept == Outer(mode="b", path="p", inner=Inner(size=4, beam=2))
    assert keep_restart_keys(running, Outer(mode="b")) == Outer(mode="b")
    same = Outer(mode="b")
    assert keep_restart_keys(running, same) is same


@pytest.mark.parametrize(("obj", "where"), [
    (Outer(mode="c"), "outer.mode"),
    (Outer(tags=("x", "z")), "outer.tags"),
    (Outer(floor=1.5), "outer.floor"),
    (Outer(inner=Inner(beam=0)), "outer.inner.beam"),
])
def test_check_ranges_names_the_key(obj: Outer, where: str) -> None:
    with pytest.raises(InvalidArgument, match=where) as err:
        check_ranges(obj, "outer")
    assert err.value.field == where


def test_check_ranges_accepts_the_defaults() -> None:
    check_ranges(Outer(tags=("y", "x")), "outer")
