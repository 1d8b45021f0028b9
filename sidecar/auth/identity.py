"""The identity of the call being served, set by the auth interceptor for its thread."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

OPERATOR = "operator"
AGENT = "agent"


@dataclass(frozen=True, slots=True)
class Identity:
    role: str  # OPERATOR or AGENT
    agent_id: str = ""  # the agent of an AGENT token
    token_id: str = ""
    write_shared: bool = False  # may write shared memories (server.auth.shared_write)

    @property
    def operator(self) -> bool:
        return self.role == OPERATOR


_current: ContextVar[Identity | None] = ContextVar("memsidecar_identity", default=None)


def current() -> Identity | None:
    """The caller of the call this thread serves; None when authentication is off."""
    return _current.get()


def bind(identity: Identity | None) -> object:
    return _current.set(identity)


def unbind(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]
