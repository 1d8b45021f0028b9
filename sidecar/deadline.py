"""Whether the caller of the current call still waits for its result.

The server binds a check per call (deadline not passed, not cancelled); domain code asks right
before it commits a write, so a call that expired or was cancelled changes nothing. Outside a
call (tools, tests calling the domain directly) every call is alive.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from sidecar.errors import DeadlineExceeded

_check: ContextVar[Callable[[], bool] | None] = ContextVar("memsidecar_alive", default=None)


def bind(check: Callable[[], bool]) -> object:
    return _check.set(check)


def unbind(token: object) -> None:
    _check.reset(token)  # type: ignore[arg-type]


def alive() -> bool:
    check = _check.get()
    return check is None or check()


def ensure_alive() -> None:
    """Raise DeadlineExceeded (inside a transaction: rolls it back) when the caller is gone."""
    if not alive():
        raise DeadlineExceeded(
            "the call's deadline passed or it was cancelled before its write was committed; "
            "nothing was written", reason="NOT_COMMITTED")


def ensure_waited_for(work: str) -> None:
    """Raise DeadlineExceeded when the caller is gone, so a long read stops early."""
    if not alive():
        raise DeadlineExceeded(
            f"the call's deadline passed or it was cancelled; {work} stopped", reason="STOPPED")
