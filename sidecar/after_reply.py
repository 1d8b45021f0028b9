"""Work a call starts that must not run beside its reply: started once the reply is sent.

A call's thread hands its reply to gRPC after its behaviour returns; a thread of the server
woken meanwhile (a capture's drain, the state writer) takes the interpreter from the threads
that send the reply, and the caller waits for both (decisions/0029). The server binds a list
per admitted unary call (``sidecar.api.admission``); ``later(fn)`` adds ``fn`` to it, and
the list runs once the call has ended (its reply and status sent). Outside such a call
(tools, tests calling the domain directly, client streams) ``fn`` runs at once. What is
deferred must be short (a wake-up, a hand-off to a queue): it runs on grpc's polling thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar

log = logging.getLogger(__name__)

Later = list[Callable[[], None]]

_later: ContextVar[Later | None] = ContextVar("memsidecar_after_reply", default=None)


def bind() -> tuple[object, Later]:
    """A list for the current call's deferred work (the server runs it: ``run``)."""
    jobs: Later = []
    return _later.set(jobs), jobs


def unbind(token: object) -> None:
    _later.reset(token)  # type: ignore[arg-type]


def later(fn: Callable[[], None]) -> None:
    """Run ``fn`` once the current call's reply is sent (at once outside a call); the same
    ``fn`` asked for twice in a call runs once."""
    jobs = _later.get()
    if jobs is None:
        fn()
    elif fn not in jobs:
        jobs.append(fn)


def run(jobs: Later) -> None:
    """Run ``jobs`` in order (each one's failure is its own: the rest still run)."""
    for fn in jobs:
        try:
            fn()
        except Exception:  # one's failure must not stop the others
            log.exception("work after a reply failed")
