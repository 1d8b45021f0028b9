"""protobuf <-> domain conversion for the Vault service."""

from __future__ import annotations

from memsidecar.v1 import vault_pb2

from sidecar.api.convert import memory_to_pb, timestamp
from sidecar.store import versions
from sidecar.vault.hygiene import (
    NEAR_DUPLICATE,
    STALE_LOW_IMPORTANCE,
    SUPERSEDED,
    DeletionCandidate,
    SimilarPair,
)
from sidecar.vault.snapshot import Snapshot
from sidecar.vault.stats import VaultStatistics

EVENTS = {
    versions.CREATE: vault_pb2.VERSION_EVENT_CREATE,
    versions.UPDATE: vault_pb2.VERSION_EVENT_UPDATE,
    versions.FORGET: vault_pb2.VERSION_EVENT_FORGET,
    versions.PROMOTE: vault_pb2.VERSION_EVENT_PROMOTE,
    versions.RESTORE: vault_pb2.VERSION_EVENT_RESTORE,
    versions.BASELINE: vault_pb2.VERSION_EVENT_BASELINE,
}
DELETION_REASONS = {
    STALE_LOW_IMPORTANCE: vault_pb2.DELETION_REASON_STALE_LOW_IMPORTANCE,
    SUPERSEDED: vault_pb2.DELETION_REASON_SUPERSEDED,
    NEAR_DUPLICATE: vault_pb2.DELETION_REASON_NEAR_DUPLICATE,
}


def version_to_pb(v: versions.MemoryVersion) -> vault_pb2.MemoryVersion:
    return vault_pb2.MemoryVersion(
        version=v.version,
        event=EVENTS.get(v.event, vault_pb2.VERSION_EVENT_UNSPECIFIED),
        recorded_at=timestamp(v.recorded_at),
        actor=v.actor,
        content=v.content,
        type=int(v.type),
        importance=v.importance,
        source=v.source,
        channel_id=v.channel_id,
        agent_id=v.agent_id,
        forgotten=v.forgotten,
        tier=int(v.tier),
        topic_id=v.topic_id,
    )


def snapshot_to_pb(snapshot: Snapshot) -> vault_pb2.GetSnapshotResponse:
    return vault_pb2.GetSnapshotResponse(
        text=snapshot.text,
        canon=[memory_to_pb(m) for m in snapshot.canon],
        registers=[memory_to_pb(m) for m in snapshot.registers],
        omitted=snapshot.omitted,
    )


def pair_to_pb(pair: SimilarPair) -> vault_pb2.SimilarPair:
    return vault_pb2.SimilarPair(
        first=memory_to_pb(pair.first), second=memory_to_pb(pair.second), cosine=pair.cosine
    )


def candidate_to_pb(c: DeletionCandidate) -> vault_pb2.DeletionCandidate:
    return vault_pb2.DeletionCandidate(
        memory=memory_to_pb(c.memory), reason=DELETION_REASONS[c.reason], detail=c.detail,
        related_id=c.related_id,
    )


def stats_to_pb(s: VaultStatistics) -> vault_pb2.VaultStatsResponse:
    return vault_pb2.VaultStatsResponse(
        live=s.live,
        forgotten=s.forgotten,
        history_rows=s.history_rows,
        db_size_bytes=s.db_size_bytes,
        register_topics=s.register_topics,
        max_memories_per_scope=s.max_memories_per_scope,
        scopes=[
            vault_pb2.ScopeCount(agent_id=c.agent_id, live=c.live, forgotten=c.forgotten,
                                 canon=c.canon, registers=c.registers,
                                 captured=c.captured)
            for c in s.scopes
        ],
        groups=[
            vault_pb2.GroupCount(agent_id=g.agent_id, tier=int(g.tier),
                                 type=int(g.type),
                                 live=g.live, forgotten=g.forgotten)
            for g in s.groups
        ],
        next_page_token=s.next_page_token,
        captured=s.captured,
    )
