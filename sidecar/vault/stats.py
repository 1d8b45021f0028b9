"""VaultStats: counts by scope, tier and type, live vs forgotten, history rows, database size."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.records import MemoryType, Tier
from sidecar.store.repos import Repositories


@dataclass(frozen=True, slots=True)
class GroupCount:
    agent_id: str
    tier: Tier
    type: MemoryType
    live: int
    forgotten: int


@dataclass(frozen=True, slots=True)
class ScopeCount:
    agent_id: str
    live: int
    forgotten: int
    canon: int  # live CANON memories
    registers: int  # live REGISTER memories
    captured: int = 0  # live captured memories (source "capture"), also in live and canon


@dataclass(frozen=True, slots=True)
class VaultStatistics:
    live: int
    forgotten: int
    history_rows: int
    db_size_bytes: int
    register_topics: int
    max_memories_per_scope: int  # 0 = unlimited
    scopes: tuple[ScopeCount, ...]
    groups: tuple[GroupCount, ...]
    captured: int = 0  # live captured memories in all scopes, also in live


CAPTURE_SOURCE = "capture"  # sidecar.capture's (a lower layer does not import it)


def vault_stats(repos: Repositories, max_per_scope: int) -> VaultStatistics:
    vault = repos.vault
    groups: dict[tuple[str, int, int], list[int]] = {}
    for agent_id, tier, type_, forgotten, count in vault.counts():
        groups.setdefault((agent_id, tier, type_), [0, 0])[int(forgotten)] += count
    group_counts = tuple(
        GroupCount(a, Tier(t), MemoryType(ty), live, gone)
        for (a, t, ty), (live, gone) in sorted(groups.items())
    )
    captured = vault.live_by_source(CAPTURE_SOURCE)
    scopes: dict[str, list[int]] = {}
    for g in group_counts:
        s = scopes.setdefault(g.agent_id, [0, 0, 0, 0])
        s[0] += g.live
        s[1] += g.forgotten
        if g.tier == Tier.CANON:
            s[2] += g.live
        elif g.tier == Tier.REGISTER:
            s[3] += g.live
    return VaultStatistics(
        live=sum(g.live for g in group_counts),
        forgotten=sum(g.forgotten for g in group_counts),
        history_rows=repos.versions.count(),
        db_size_bytes=repos.db.size_bytes(),
        register_topics=vault.register_topics(),
        max_memories_per_scope=max_per_scope,
        scopes=tuple(ScopeCount(a, v[0], v[1], v[2], v[3], captured.get(a, 0))
                     for a, v in sorted(scopes.items())),
        groups=group_counts,
        captured=sum(captured.values()),
    )
