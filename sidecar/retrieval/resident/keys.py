"""Scopes: the unit a sidecar loads into its indexes and evicts.

A memory's scope is its (agent_id, user_id): ('', '') the shared memories, (agent, '') an
agent's general knowledge and the memories private to its channels, (agent, user) an end
user's own memories with that agent. A search reads only the scopes of its viewer
(``viewer_scopes``), which hold every memory ``Memory.offered_to`` may offer it; the vault's
write gates read the writer's (``writer_scopes``).
"""

from __future__ import annotations

from sidecar.records import Memory, Viewer

ScopeKey = tuple[str, str]  # (agent_id, user_id)
SHARED: ScopeKey = ("", "")


def scope_of(memory: Memory) -> ScopeKey:
    return memory.agent_id, memory.user_id


def viewer_scopes(viewer: Viewer) -> tuple[ScopeKey, ...]:
    """The scopes holding every memory that may be offered to ``viewer``: the shared one,
    the agent's own and, unless the channel is shared by several users, the user's."""
    keys = [SHARED, (viewer.agent_id, "")]
    if viewer.user_id and not viewer.shared_channel:
        keys.append((viewer.agent_id, viewer.user_id))
    return tuple(dict.fromkeys(keys))


def writer_scopes(agent_id: str, user_id: str) -> tuple[ScopeKey, ...]:
    """The scopes a write gate compares a new memory of (agent_id, user_id) with: the
    agent's general knowledge and the user's own memories (never another user's)."""
    return tuple(dict.fromkeys([(agent_id, ""), (agent_id, user_id)]))


def label(key: ScopeKey) -> str:
    """A scope as operators read it: 'shared', 'agent' or 'agent/user'."""
    agent, user = key
    if not agent and not user:
        return "shared"
    return f"{agent}/{user}" if user else agent
