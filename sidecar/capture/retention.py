"""Captures kept by rule: per agent, ``capture_ttl_days`` and ``capture_max_per_user``
(``[agents.memory_injection]``). Run by the channel sweep; beyond them the oldest captured
memories are erased for good (``Eraser.erase``: rows, indexes, index files, WAL), and capture
records older than the TTL go too."""

from __future__ import annotations

from collections.abc import Callable

from sidecar.injection.config import MemoryInjectionConfig
from sidecar.memory.erasure import Erased, Eraser
from sidecar.timing import now_us

DAY_US = 86_400 * 1_000_000


def retention_once(eraser: Eraser, config_for: Callable[[str], MemoryInjectionConfig],
                   now: int | None = None) -> Erased:
    """One pass over every agent with captures; what was erased."""
    at = now_us() if now is None else now
    repo = eraser.repo
    done = Erased()
    for agent_id in repo.capture_agents():
        config = config_for(agent_id)
        ids: dict[str, None] = {}
        if config.capture_ttl_days > 0:
            before = at - int(config.capture_ttl_days * DAY_US)
            ids.update(dict.fromkeys(repo.captures_before(agent_id, before)))
            done += Erased(captures=eraser.erase_records_before(agent_id, before))
        if config.capture_max_per_user > 0:
            ids.update(dict.fromkeys(repo.captures_beyond(agent_id, config.capture_max_per_user)))
        if ids:
            done += eraser.erase(list(ids), "retention")
    return done
