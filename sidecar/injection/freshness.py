"""Fresher beats cooldown: which memories still in view changed (a version bump) since."""

from __future__ import annotations

from collections.abc import Mapping

from sidecar.injection.state import Injected
from sidecar.records import Memory


def changed_since_injected(cooling: Mapping[str, tuple[Memory, Injected]]) -> set[str]:
    """Ids whose version grew since the block in view carried them."""
    return {mid for mid, (memory, seen) in cooling.items() if memory.version > seen.version}
