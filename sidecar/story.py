"""A traced turn told in the order that explains it: what was injected, what was held back
(dedup, budget) and why, then what the relevance floor cut; each group highest score first.

Generic over the record type so the admin page (domain records) and the command line
(protobuf) tell it the same way; it imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
FLOOR_SHOWN = 3  # floor cuts shown before "N more below the floor"


def best_first(items: Iterable[T], score: Callable[[T], float]) -> list[T]:
    return sorted(items, key=lambda item: -score(item))


def split_drops(drops: Iterable[T], is_floor: Callable[[T], bool],
                score: Callable[[T], float]) -> tuple[list[T], list[T]]:
    """(held back, cut by the floor), each highest score first."""
    held: list[T] = []
    floor: list[T] = []
    for drop in drops:
        (floor if is_floor(drop) else held).append(drop)
    return best_first(held, score), best_first(floor, score)


def plural(count: int, one: str, many: str = "") -> str:
    """``1 memory``, ``2 memories``, ``0 candidates``."""
    return f"{count} {one if count == 1 else (many or one + 's')}"
