"""``Live[T]``: the one way to read hot configuration (outside ``sidecar.config`` so feature
packages that the schema imports can use it without an import cycle).

A component that honours hot reload takes a ``Live[T]`` and calls ``get()`` at the point of use
(once per request, keeping that value for the whole request). ``ConfigStore.live(...)``
gives views of the running config file; ``Live.fixed(value)`` pins a value (tests, tools).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")


class Live(Generic[T]):
    __slots__ = ("_read",)

    def __init__(self, read: Callable[[], T]) -> None:
        self._read = read

    @classmethod
    def fixed(cls, value: T) -> Live[T]:
        return cls(lambda: value)

    def get(self) -> T:
        """The value in force now; callers keep it for the rest of the request."""
        return self._read()

    def map(self, view: Callable[[T], U]) -> Live[U]:
        """A live view of part of this value, e.g. ``config.map(lambda c: c.retrieval)``."""
        read = self._read
        return Live(lambda: view(read()))
