"""The admin page's view of the scopes held in the indexes (loaded on demand, evicted LRU)."""

from __future__ import annotations

from sidecar.admin.html import ident, table
from sidecar.retrieval.contract import Retriever
from sidecar.retrieval.resident.lru import ResidentScopes

_MB = 2**20


def resident_section(retriever: Retriever) -> str:
    """Held scopes, bytes against the budget, loads and evictions; '' for an engine that
    holds no scopes apart."""
    resident = getattr(retriever, "resident", None)
    if not isinstance(resident, ResidentScopes):
        return ""
    s = resident.stats()
    mean_ms = 1000 * s.load_seconds / s.loads if s.loads else 0.0
    held = table(("Scope (most recently used first)", "MB"),
                 ([ident(name), f"{size / _MB:.2f}"] for name, size in s.held),
                 "No scope held.")
    return (f"<h2>In memory</h2><p>{s.resident} scopes held, {s.resident_bytes / _MB:.1f} MB "
            f"of {s.budget_bytes / _MB:.0f} MB ([retrieval] resident_mb); {s.loads} loaded "
            f"on first use ({mean_ms:.1f} ms each on average), {s.evictions} evicted since "
            f"start.</p>{held}")
