"""The snapshot: a compact, always-injectable block of an agent's canon memories and active
registers (REGISTER memories with a topic_id), shared + the agent's own.

Order: canon first (importance desc, then most recently updated), then registers (most
recently updated first). Limits: ``snapshot_canon_limit`` canon and
``snapshot_register_limit`` register memories are considered; lines are then taken in that
order while the block stays within ``snapshot_max_chars`` (a line that does not fit is
skipped, later shorter ones may still fit). The injection pipeline uses ``Snapshot.memories``
as its pinned section when ``pinned_source = "snapshot"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sidecar.records import Memory, Tier
from sidecar.store.vault_repo import VaultRepo
from sidecar.vault.config import VaultConfig

HEADER = "[Snapshot from memory]"
CANON_HEADING = "Canon:"
REGISTER_HEADING = "Registers:"


@dataclass(frozen=True, slots=True)
class Snapshot:
    agent_id: str
    canon: tuple[Memory, ...]
    registers: tuple[Memory, ...]
    text: str  # the rendered block; '' when there is nothing to show
    omitted: int  # memories left out by the character budget

    @property
    def memories(self) -> tuple[Memory, ...]:
        return self.canon + self.registers


def canon_line(memory: Memory) -> str:
    return f"- ({memory.type.label}) {_one_line(memory.content)}"


def register_line(memory: Memory) -> str:
    return f"- [{memory.topic_id}] {_one_line(memory.content)}"


def build_snapshot(repo: VaultRepo, agent_id: str, config: VaultConfig) -> Snapshot:
    canon = repo.visible_tier(agent_id, Tier.CANON, "importance", config.snapshot_canon_limit)
    registers = repo.visible_tier(
        agent_id, Tier.REGISTER, "recent", config.snapshot_register_limit
    )
    return render_snapshot(agent_id, canon, registers, config.snapshot_max_chars)


def render_snapshot(
    agent_id: str, canon: list[Memory], registers: list[Memory], max_chars: int
) -> Snapshot:
    """Pure: pick lines in priority order within ``max_chars`` and render the block."""
    budget = max_chars - len(HEADER) - len(CANON_HEADING) - len(REGISTER_HEADING) - 3
    kept_canon = _fit(canon, canon_line, budget)
    budget -= sum(len(canon_line(m)) + 1 for m in kept_canon)
    kept_registers = _fit(registers, register_line, budget)
    lines: list[str] = []
    if kept_canon:
        lines += [CANON_HEADING, *(canon_line(m) for m in kept_canon)]
    if kept_registers:
        lines += [REGISTER_HEADING, *(register_line(m) for m in kept_registers)]
    text = "\n".join([HEADER, *lines]) if lines else ""
    omitted = len(canon) + len(registers) - len(kept_canon) - len(kept_registers)
    return Snapshot(agent_id, tuple(kept_canon), tuple(kept_registers), text, omitted)


def _fit(memories: list[Memory], line: Callable[[Memory], str], budget: int) -> list[Memory]:
    kept: list[Memory] = []
    for memory in memories:
        cost = len(line(memory)) + 1
        if cost <= budget:
            kept.append(memory)
            budget -= cost
    return kept


def _one_line(text: str) -> str:
    return " ".join(text.split())
