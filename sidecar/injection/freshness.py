"""Fresher beats cooldown: which memories in cooldown changed since they were injected."""

from __future__ import annotations

from collections.abc import Mapping

from sidecar.injection.state import Injected
from sidecar.records import Memory, Relation
from sidecar.store.edges import EdgeRepo

SUPERSEDING = (Relation.UPDATES, Relation.CONTRADICTS)


def changed_since_injected(cooling: Mapping[str, tuple[Memory, Injected]],
                           edges: EdgeRepo) -> set[str]:
    """Ids whose version grew, or that a memory points to with UPDATES or CONTRADICTS
    through an edge created after the injection."""
    fresh = {mid for mid, (memory, seen) in cooling.items() if memory.version > seen.version}
    rest = [mid for mid in cooling if mid not in fresh]
    if not rest:
        return fresh
    oldest = min(cooling[mid][1].at_us for mid in rest)
    for edge in edges.pointing_to(rest, SUPERSEDING, oldest):
        if edge.created_at > cooling[edge.target_id][1].at_us:
            fresh.add(edge.target_id)
    return fresh
