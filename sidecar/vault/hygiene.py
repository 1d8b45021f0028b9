"""Hygiene suggestions (never acted on here): similar pairs to consolidate, and deletion
candidates with a reason. Callers decide; nothing in this module writes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.pairs import top_pairs
from sidecar.deadline import ensure_waited_for
from sidecar.records import Memory
from sidecar.retrieval.contract import cosine_of
from sidecar.retrieval.scopes import ScopeScan
from sidecar.store.memories import MemoryRepo
from sidecar.store.vault_repo import VaultRepo
from sidecar.vault.config import VaultConfig

SUPERSEDED = "SUPERSEDED"
NEAR_DUPLICATE = "NEAR_DUPLICATE"
STALE_LOW_IMPORTANCE = "STALE_LOW_IMPORTANCE"
US_PER_DAY = 86_400 * 1_000_000
MAX_PROPOSALS = 1000  # ProposeDeletions answers at most this many (the reply stays small)
SCAN = "the similar-pairs scan (a scope of n memories compares n²/2 pairs: allow it more time)"


@dataclass(frozen=True, slots=True)
class SimilarPair:
    first: Memory  # the older of the two (smaller seq)
    second: Memory
    cosine: float


@dataclass(frozen=True, slots=True)
class DeletionCandidate:
    memory: Memory
    reason: str  # SUPERSEDED | NEAR_DUPLICATE | STALE_LOW_IMPORTANCE
    detail: str
    related_id: str = ""  # the superseding / duplicated memory, when there is one


def similar_pairs(vectors: np.ndarray, floor: float, limit: int) -> list[tuple[int, int, float]]:
    """The best ``limit`` (i, j, cosine) with i < j and cosine >= floor, most similar first
    (then by i, then j). Memory stays bounded by the tile and ``limit``, not by the pairs;
    a passed deadline stops the scan between tiles (DeadlineExceeded)."""
    first, second, cosines = top_pairs(vectors, floor, limit,
                                       between_tiles=lambda: ensure_waited_for(SCAN))
    return list(zip(first.tolist(), second.tolist(), cosines.tolist(), strict=True))


def consolidation_candidates(
    index: ScopeScan, repo: MemoryRepo, agent_id: str, floor: float, limit: int
) -> list[SimilarPair]:
    ids, vectors = index.rows(agent_id)
    pairs = similar_pairs(vectors, floor, limit)
    wanted = sorted({ids[i] for i, _, _ in pairs} | {ids[j] for _, j, _ in pairs})
    memories = repo.get_many(wanted)
    result = []
    for i, j, cosine in pairs:
        a, b = memories.get(ids[i]), memories.get(ids[j])
        if a is None or b is None or a.forgotten or b.forgotten:
            continue
        if a.private_key != b.private_key:  # two users' (or channels') own words: both stay
            continue
        first, second = (a, b) if a.seq < b.seq else (b, a)
        result.append(SimilarPair(first, second, cosine_of(cosine)))
    return result


def propose_deletions(
    index: ScopeScan, memories: MemoryRepo, vault: VaultRepo, agent_id: str,
    config: VaultConfig, now_us: int, limit: int = MAX_PROPOSALS,
) -> list[DeletionCandidate]:
    """At most ``limit`` proposals: superseded ones first, then near-duplicates, then stale
    ones (each memory once per reason). Memory and reply stay bounded by ``limit``, not by the
    scope."""
    found = [DeletionCandidate(memory, SUPERSEDED, "a live memory UPDATES it (edge)", source)
             for memory, source in vault.superseded_in_scope(agent_id, limit)]
    pairs = consolidation_candidates(index, memories, agent_id, config.duplicate_threshold,
                                     limit - len(found))
    for pair in pairs:
        drop, keep = weaker(pair.first, pair.second)
        found.append(DeletionCandidate(
            drop, NEAR_DUPLICATE, f"cosine {pair.cosine:.3f} to a memory that is kept", keep.id))
    cutoff = now_us - int(config.stale_after_days * US_PER_DAY)
    for memory in vault.stale_in_scope(agent_id, config.stale_max_importance, cutoff,
                                       limit - len(found)):
        touched = max(memory.updated_at, memory.last_accessed_at)
        days = (now_us - touched) / US_PER_DAY
        found.append(DeletionCandidate(
            memory, STALE_LOW_IMPORTANCE,
            f"importance {memory.importance:.2f}, untouched for {days:.0f} days"))
    return found


def weaker(a: Memory, b: Memory) -> tuple[Memory, Memory]:
    """(the one to drop, the one to keep): lower importance goes, then the older one."""
    if (a.importance, a.updated_at, a.seq) < (b.importance, b.updated_at, b.seq):
        return a, b
    return b, a
