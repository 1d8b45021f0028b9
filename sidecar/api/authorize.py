"""Request rules with authentication on: the agent comes from the token, never the request.

A field naming the caller (``agent_id`` of reads, forget, edges, promote, reset) must be empty
or the token's agent, and empty becomes the token's agent. A field naming a scope to write
(``memory.agent_id``, UpdateConfig's ``agent_id``) must be the token's agent, or empty (shared)
when ``shared_write = "any"``. Operator-only calls (VaultStats, config defaults) need the
operator token; the operator may name any agent. With authentication off nothing here applies:
the request's ``agent_id`` is the caller (ownership rules in the domain).
"""

from __future__ import annotations

from google.protobuf.message import Message

from sidecar.auth import identity
from sidecar.auth.identity import Identity
from sidecar.errors import PermissionDenied

CALLER_FIELDS = {
    "GetMemoryRequest", "ForgetMemoryRequest", "ListMemoriesRequest", "AddEdgeRequest",
    "RemoveEdgeRequest", "SearchRequest", "InjectRequest", "PruneHistoryRequest",
    "ResetChannelRequest", "GetConfigRequest", "PromoteToCanonRequest",
    "GetMemoryHistoryRequest", "GetSnapshotRequest", "GetInjectionTraceRequest",
    "ForgetUserRequest",
}
SCOPE_FIELDS = {"FindConsolidationCandidatesRequest": "scope", "ProposeDeletionsRequest": "scope"}
OPERATOR_ONLY = {"VaultStatsRequest"}


def may_write_shared() -> bool:
    """Whether the caller may write shared memories (always, with authentication off)."""
    who = identity.current()
    return who is None or who.operator or who.write_shared


def authorize(request: Message) -> None:
    """Check (and fill in) the agent fields of ``request`` for the current caller."""
    who = identity.current()
    if who is None or who.operator:
        return
    name = request.DESCRIPTOR.name
    if name in OPERATOR_ONLY:
        raise PermissionDenied(f"{name[:-7]} needs the operator token", reason="OPERATOR_ONLY")
    if name == "ListMemoriesRequest" and request.all_agents:
        raise PermissionDenied("ListMemories with all_agents needs the operator token; an "
                               "agent token lists its own and the shared memories",
                               field="all_agents", reason="OPERATOR_ONLY")
    if name in CALLER_FIELDS:
        _caller(request, "agent_id", who)
    elif name in SCOPE_FIELDS:
        _own_or_shared(getattr(request, SCOPE_FIELDS[name]), SCOPE_FIELDS[name], who)
    elif name == "UpsertMemoryRequest":
        check_memory_scope(request.memory.agent_id, "memory.agent_id")
    elif name == "UpdateConfigRequest" and request.agent_id != who.agent_id:
        raise PermissionDenied(
            "an agent token may change only its own agent's settings (agent_id = the "
            "token's agent); the defaults need the operator token", field="agent_id")


def check_memory_scope(agent_id: str, field: str) -> None:
    """A memory written with ``agent_id``: the caller's own, or shared if allowed."""
    who = identity.current()
    if who is None or who.operator:
        return
    _own_or_shared(agent_id, field, who)
    if not agent_id and not who.write_shared:
        raise PermissionDenied(
            f"{field} is empty (a shared memory); shared memories are written with the "
            "operator token only (server.auth.shared_write)", field=field)


def _caller(request: Message, field: str, who: Identity) -> None:
    _own_or_shared(getattr(request, field), field, who)
    setattr(request, field, who.agent_id)


def _own_or_shared(value: str, field: str, who: Identity) -> None:
    if value and value != who.agent_id:
        raise PermissionDenied(
            f"{field} must be empty or the token's agent; a token acts for one agent only",
            field=field)
