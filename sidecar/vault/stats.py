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


@dataclass(frozen=True, slots=True)
class ScopePage:
    """A page of scopes in agent_id order (the shared scope "" first)."""

    scopes: tuple[ScopeCount, ...]
    earlier: bool  # scopes before this page exist
    later: bool  # scopes after this page exist


@dataclass(frozen=True, slots=True)
class Totals:
    live: int
    forgotten: int
    scopes: int
    history_rows: int
    db_size_bytes: int


def vault_totals(repos: Repositories) -> Totals:
    """Store-wide counts, without a row per scope."""
    live, forgotten, scopes = repos.vault.totals()
    return Totals(live, forgotten, scopes, repos.versions.count(), repos.db.size_bytes())


def scope_page(repos: Repositories, size: int, after: str | None = None,
               before: str | None = None) -> ScopePage:
    """At most ``size`` scopes: the first ones, those after ``after`` or those before
    ``before`` (agent ids)."""
    rows = repos.vault.scope_counts(after, before, size + 1)
    more = len(rows) > size
    if before is not None:
        rows = rows[-size:] if more else rows
        return ScopePage(tuple(ScopeCount(*r) for r in rows), more, True)
    return ScopePage(tuple(ScopeCount(*r) for r in rows[:size]), after is not None, more)


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
