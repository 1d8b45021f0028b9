"""VaultStats: counts by scope, tier and type, live vs forgotten, history rows, database size;
the per-scope counts a page of scopes at a time."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sidecar.records import CAPTURE_SOURCE, MemoryType, Tier
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
    users: int = 0  # end users with a live memory in the scope
    user_memories: int = 0  # live memories of end users, also in live
    captured: int = 0  # live captured memories (source "capture"), also in live and canon


@dataclass(frozen=True, slots=True)
class VaultStatistics:
    live: int
    forgotten: int
    history_rows: int
    db_size_bytes: int
    register_topics: int
    max_memories_per_scope: int  # 0 = unlimited
    scopes: tuple[ScopeCount, ...]  # one page of scopes
    groups: tuple[GroupCount, ...]  # the groups of those scopes
    next_page_token: str = ""  # '' on the last page
    captured: int = 0  # live captured memories in all scopes, also in live




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


def vault_stats(repos: Repositories, max_per_scope: int, page_size: int = 100,
                page_token: str = "") -> VaultStatistics:
    """Store-wide totals, and the scopes (and their groups) of one page of ``page_size``
    scopes in agent_id order; the SQL reads only that page's scopes."""
    vault = repos.vault
    after = vault.scope_after(page_token)
    rows = vault.scope_counts(after, None, page_size + 1)
    scopes = tuple(ScopeCount(*r) for r in rows[:page_size])
    groups: dict[tuple[str, int, int], list[int]] = {}
    if scopes:
        first, last = scopes[0].agent_id, scopes[-1].agent_id
        for agent_id, tier, type_, gone, count in vault.counts(first, last):
            groups.setdefault((agent_id, tier, type_), [0, 0])[int(gone)] += count
        captured = vault.live_by_source(CAPTURE_SOURCE, first, last)
        scopes = tuple(replace(c, captured=captured.get(c.agent_id, 0)) for c in scopes)
    live, forgotten, _ = vault.totals()
    return VaultStatistics(
        live=live,
        forgotten=forgotten,
        history_rows=repos.versions.count(),
        db_size_bytes=repos.db.size_bytes(),
        register_topics=vault.register_topics(),
        max_memories_per_scope=max_per_scope,
        scopes=scopes,
        groups=tuple(GroupCount(a, Tier(t), MemoryType(ty), n_live, n_gone)
                     for (a, t, ty), (n_live, n_gone) in groups.items()),
        next_page_token=vault.scope_token(scopes[-1].agent_id) if len(rows) > page_size else "",
        captured=vault.live_count_of_source(CAPTURE_SOURCE),
    )
