"""The advisory locks a write transaction takes on a shared store: its scopes, not the store.

The write gates (near-duplicate, topic) read the rows of the writer's scopes only
(``sidecar.retrieval.scopes.writer_scopes``): a write of ``(agent, user)`` compares with the
agent's general knowledge ``(agent, '')`` and the user's own memories. So it holds its own
scope exclusive and the agent's shared: two writes into one scope run one at a time (no
duplicate slips in between), writes for different users of an agent run at once, and a
write of the agent's general knowledge waits for its users' writes in flight (their gates
read it). Every writer first holds FEED_LOCK shared; what changes rows of any scope (an
erasure) holds it exclusive and so waits for, and holds back, every write.

Keys are sorted before they are taken, so two transactions never wait for each other in a
cycle. Two scopes whose hashes collide share a lock: they wait for each other, which is
slower and never wrong.
"""

from __future__ import annotations

from collections.abc import Collection

from sidecar.store.postgres.db import FEED_LOCK
from sidecar.store.scope_keys import ScopeKey, lock_call, scope_hash

__all__ = ["SCOPE_LOCKS", "ScopeKey", "lock_statement", "plan", "scope_hash"]

SCOPE_LOCKS = 0x6D656D75  # first key of the two-key advisory locks (one per scope)


def plan(scopes: Collection[ScopeKey]) -> list[tuple[int, bool]]:
    """(hash, exclusive) of each lock a write into ``scopes`` takes, in the order taken."""
    wanted: dict[int, bool] = {}
    for agent, user in scopes:
        wanted[scope_hash((agent, user))] = True
        if user:
            own = scope_hash((agent, ""))
            wanted[own] = wanted.get(own, False)
    return sorted(wanted.items())


def lock_statement(scopes: Collection[ScopeKey] | None) -> tuple[str, tuple[int, ...]]:
    """One statement taking the locks of a write into ``scopes`` (None: every scope, i.e.
    FEED_LOCK exclusive) in their order (a target list is evaluated left to right)."""
    if scopes is None:
        return "SELECT pg_advisory_xact_lock(?::bigint)", (FEED_LOCK,)
    calls = ["pg_advisory_xact_lock_shared(?::bigint)"]
    params = [FEED_LOCK]
    for key, exclusive in plan(scopes):
        calls.append(lock_call(exclusive))
        params += [SCOPE_LOCKS, key]
    return "SELECT " + ", ".join(calls), tuple(params)
