"""The Vault: installs the write gate and topic upserts on a MemoryService and offers the
vault operations (promotion, history, snapshot, hygiene, stats) the gRPC edge calls."""

from __future__ import annotations

import logging
import threading

import numpy as np

from sidecar.errors import DomainError, FailedPrecondition, InvalidArgument
from sidecar.knobs import check_ranges
from sidecar.live import Live
from sidecar.memory.service import MemoryService, WriteGate
from sidecar.memory.validation import check_id, check_unit
from sidecar.records import Memory, MemoryDraft, Tier
from sidecar.redact import echo
from sidecar.retrieval.scopes import ScopeScan
from sidecar.store.vault_repo import VaultRepo
from sidecar.store.versions import MemoryVersion
from sidecar.timing import now_us
from sidecar.vault import reasons
from sidecar.vault.capacity import CapacityGate, MakeRoom
from sidecar.vault.config import VaultConfig
from sidecar.vault.duplicates import DuplicateGate
from sidecar.vault.gates import text_gates
from sidecar.vault.hygiene import (
    DeletionCandidate,
    SimilarPair,
    consolidation_candidates,
    propose_deletions,
)
from sidecar.vault.snapshot import Snapshot, build_snapshot
from sidecar.vault.stats import (
    ScopePage,
    Totals,
    VaultStatistics,
    scope_page,
    vault_stats,
    vault_totals,
)
from sidecar.vault.topics import TopicResolver

log = logging.getLogger(__name__)

PROMOTION_SOURCE = "promotion"
MAX_PAIRS = 1000
DEFAULT_PAGE = 100  # VaultStats scopes and GetMemoryHistory versions when the caller says 0
MAX_PAGE = 1000


def build_gates(service: MemoryService, repo: VaultRepo, index: ScopeScan,
                config: VaultConfig, room: MakeRoom | None = None) -> list[WriteGate]:
    """The enabled gate steps in order: noise, length, PII, duplicate, capacity (``room``:
    erases a full scope's oldest captures for an explicit write)."""
    gates = text_gates(config)
    if config.duplicate_gate:
        gates.append(DuplicateGate(index, service.memories, repo, config.duplicate_threshold,
                                   config.duplicate_numbers_must_match))
    if config.max_memories_per_scope:
        gates.append(CapacityGate(service.memories, repo, config.max_memories_per_scope,
                                  room))
    return gates


class Vault:
    """Installed on a MemoryService as its vault WriteGate and DraftResolver.

    ``scopes``: exact per-scope scans of the live embeddings (the retrieval engine's, kept
    current by its listener). ``config`` is the running ``[vault]`` (hot): the gate steps are
    rebuilt whenever a new config appears.
    """

    def __init__(self, service: MemoryService, scopes: ScopeScan,
                 config: Live[VaultConfig], room: MakeRoom | None = None) -> None:
        self._config = config
        self._room = room
        self.service = service
        self.repo = service.repos.vault
        self.index = scopes
        self._topics = TopicResolver(self.repo)
        self._built_for: VaultConfig | None = None
        self._gates: list[WriteGate] = []
        self._lock = threading.Lock()
        service.gates.append(self)
        service.resolvers.append(self)
        # The capacity gate counts the agent's every live memory (all its users').
        service.agent_wide = lambda: bool(self.config.max_memories_per_scope)

    @property
    def config(self) -> VaultConfig:
        return self._config.get()

    def gates(self) -> list[WriteGate]:
        """The enabled gate steps for the current config (rebuilt when it changes)."""
        config = self.config
        with self._lock:
            if config is not self._built_for and config != self._built_for:
                check_ranges(config, "vault")
                self._gates = build_gates(self.service, self.repo, self.index, config,
                                          self._room)
                self._built_for = config
                log.info("vault gates built", extra={"steps": len(self._gates)})
            return self._gates

    # --- WriteGate / DraftResolver (called by MemoryService inside the write transaction) ---

    def check(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> Memory | None:
        for gate in self.gates():
            match = gate.check(draft, embedding, field)
            if match is not None:
                return match
        return None

    def resolve(self, draft: MemoryDraft, field: str) -> MemoryDraft:
        return self._topics.resolve(draft, field) if self.config.topic_upsert else draft

    def promote_to_canon(self, memory_id: str, canonical_text: str, agent_id: str = "",
                         shared_ok: bool = True) -> Memory:
        """REGISTER -> CANON, optionally rewording it; the new text passes the write gate."""
        check_id(memory_id, "id")
        memory = self.service.writable(memory_id, agent_id, shared_ok)
        if memory.forgotten:
            raise FailedPrecondition(
                f"id: memory {echo(memory_id)} is forgotten; nothing to promote",
                reason=reasons.FORGOTTEN, field="id")
        if memory.tier == Tier.CANON:
            raise FailedPrecondition(f"id: memory {echo(memory_id)} is already CANON",
                                     reason=reasons.ALREADY_CANON, field="id")
        draft = MemoryDraft(
            id=memory.id, content=canonical_text if canonical_text.strip() else memory.content,
            type=memory.type, importance=memory.importance, source=PROMOTION_SOURCE,
            channel_id=memory.channel_id, agent_id=memory.agent_id, tier=Tier.CANON,
            topic_id=memory.topic_id,
        )
        try:
            return self.service.upsert(draft).memory
        except DomainError as err:
            raise _renamed(err, "memory.content", "canonical_text") from None

    def history(self, memory_id: str, agent_id: str = "", limit: int = 0
                ) -> tuple[list[MemoryVersion], int]:
        """The latest ``limit`` versions (0 = 100) oldest first, and how many there are; an
        agent sees only versions that were visible to it."""
        size = _page_size(limit, "limit")
        self.service.get(memory_id, agent_id)
        return self.service.memories.versions.history(memory_id, agent_id, size)

    def snapshot(self, agent_id: str) -> Snapshot:
        """The always-injected block; pure read, the injection pipeline's pinned source."""
        return build_snapshot(self.repo, agent_id, self.config)

    def consolidation_candidates(
        self, agent_id: str, floor: float | None, limit: int
    ) -> list[SimilarPair]:
        value = self.config.consolidation_floor if floor is None else check_unit(floor, "floor")
        return consolidation_candidates(self.index, self.service.memories, agent_id, value,
                                        min(limit or 100, MAX_PAIRS))

    def propose_deletions(self, agent_id: str) -> list[DeletionCandidate]:
        return propose_deletions(self.index, self.service.memories, self.repo, agent_id,
                                 self.config, now_us())

    def stats(self, page_size: int = 0, page_token: str = "") -> VaultStatistics:
        """Store-wide totals and one page of ``page_size`` scopes (0 = 100)."""
        return vault_stats(self.service.repos, self.config.max_memories_per_scope,
                           _page_size(page_size, "page_size"), page_token)

    def totals(self) -> Totals:
        """Store-wide counts without a row per scope (pages bounded in the number of scopes)."""
        return vault_totals(self.service.repos)

    def scope_page(self, size: int, after: str | None = None,
                   before: str | None = None) -> ScopePage:
        return scope_page(self.service.repos, size, after, before)

    def user_counts(self, agent_id: str, limit: int) -> list[tuple[str, int, int]]:
        """(user_id, live memories, of which captured) of the agent's ``limit`` end users
        with the most live memories."""
        return self.service.repos.vault.user_counts(agent_id, limit)


def _page_size(value: int, field: str) -> int:
    """A caller's page size or limit: 0 = the default, at most MAX_PAGE."""
    if value > MAX_PAGE:
        raise InvalidArgument(
            f"{field} must be at most {MAX_PAGE} (got {value}); pass 0 for {DEFAULT_PAGE}, "
            "or page through with a smaller value", field=field)
    return value or DEFAULT_PAGE


def _renamed(err: DomainError, old: str, new: str) -> DomainError:
    """The same error with the field renamed (the write path calls it memory.content)."""
    return type(err)(err.message.replace(old, new), reason=err.reason,
                     field=err.field.replace(old, new))
