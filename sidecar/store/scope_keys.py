"""Advisory lock keys of a shared store's scopes, and the erasure locks (no driver needed).

A scope ``(agent, user)`` is locked by a two-key advisory lock: a first key naming the kind
of lock, and a signed 32-bit hash of the scope. Two scopes whose hashes collide share a
lock: they wait for each other, which is slower and never wrong.

Erasure locks (``ERASE_LOCKS``, a key space of their own: no memory write takes them) keep
a turn's commit apart from an erasure of a memory it chose (decision 0047): an erasure holds
the scopes of the memories it deletes exclusive before it touches a row that names them, a
turn's commit holds the scopes of the memories it chose shared, then checks in a statement
of its own that they are still there. A commit takes no other advisory lock, so it never
waits for a memory write, and never in a cycle with an erasure.
"""

from __future__ import annotations

from collections.abc import Collection
from hashlib import blake2b, sha256

ScopeKey = tuple[str, str]  # (agent_id, user_id): ('', '') is the shared scope
ERASE_LOCKS = 0x6D656D65  # first key of the erasure locks ("meme")


def scope_hash(scope: ScopeKey) -> int:
    """The scope's second lock key: a signed 32-bit hash of its agent and user."""
    agent, user = scope
    digest = blake2b(f"{agent}\x1f{user}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_call(exclusive: bool) -> str:
    """A two-key advisory lock held to the end of the transaction (its keys two parameters)."""
    return ("pg_advisory_xact_lock(?::integer, ?::integer)" if exclusive
            else "pg_advisory_xact_lock_shared(?::integer, ?::integer)")


def erase_lock_statement(scopes: Collection[ScopeKey], exclusive: bool
                         ) -> tuple[str, tuple[int, ...]]:
    """One statement taking the erasure locks of ``scopes`` in key order (a target list is
    evaluated left to right): exclusive for an erasure of memories of those scopes, shared
    for a commit naming memories of them."""
    keys = sorted({scope_hash(scope) for scope in scopes})
    return ("SELECT " + ", ".join([lock_call(exclusive)] * len(keys)),
            tuple(v for key in keys for v in (ERASE_LOCKS, key)))


def user_digest(scope: ScopeKey) -> str:
    """How a change row names an erased user of an agent (PostgreSQL migration 12): the
    SHA-256 of the agent and the user joined by the unit separator (0x1f), hex."""
    agent, user = scope
    return sha256(f"{agent}\x1f{user}".encode()).hexdigest()
