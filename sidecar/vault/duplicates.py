"""Near-duplicate gate: a new memory that says what a live memory of its scope already says
resolves to that memory (UpsertMemoryResponse.deduplicated) instead of being stored twice.

Signal 1: embedding cosine >= ``threshold`` (an exact scan of the scope's rows in retrieval's
vector matrix, ``ScopeScan``, plus the rows written since the engine last heard of a commit:
earlier items of the same import batch).
Signal 2 (optional): the numbers in both texts must match, so "meeting at 3pm" and
"meeting at 4pm" (cosine 0.93) or "memory number 1"/"number 2" (0.97) stay distinct.
"""

from __future__ import annotations

import logging
import re

import numpy as np

from sidecar.records import Memory, MemoryDraft
from sidecar.retrieval.contract import cosine_of
from sidecar.retrieval.scopes import ScopeScan
from sidecar.store.memories import MemoryRepo
from sidecar.store.vault_repo import VaultRepo

log = logging.getLogger(__name__)

NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def numbers_of(text: str) -> frozenset[str]:
    return frozenset(NUMBER.findall(text))


def is_new(repo: MemoryRepo, draft: MemoryDraft) -> bool:
    """True when the write adds a live memory (no id, an unknown id, or a forgotten one); a
    restored forgotten memory adds none."""
    if draft.restored is not None and draft.restored.forgotten:
        return False
    if not draft.id:
        return True
    existing = repo.get(draft.id)
    return existing is None or existing.forgotten


class DuplicateGate:
    def __init__(
        self, index: ScopeScan, memories: MemoryRepo, vault: VaultRepo, threshold: float,
        numbers_must_match: bool = True,
    ) -> None:
        self.index = index
        self.memories = memories
        self.vault = vault
        self.threshold = threshold
        self.numbers_must_match = numbers_must_match
        # Per writer (agent, user): rows the index has not heard of yet ((seq, id) keys,
        # their embeddings as a matrix), valid while the index's max_seq stays ``_tail_floor``.
        self._tail: dict[tuple[str, str], tuple[list[tuple[int, str]], np.ndarray]] = {}
        self._tail_floor = -1

    def check(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> Memory | None:
        if not is_new(self.memories, draft):
            return None  # an update of a live memory is never a duplicate of something else
        for memory_id, cosine in self.candidates(draft.agent_id, embedding, draft.user_id):
            if memory_id == draft.id:
                continue
            match = self.memories.get(memory_id)
            if (match is None or match.forgotten or match.agent_id != draft.agent_id
                    or match.private_key not in ("", draft.private_key)):
                continue  # another user's or channel's own words, never resolved to
            if self.numbers_must_match and numbers_of(match.content) != numbers_of(draft.content):
                continue
            log.info("write deduplicated", extra={"field": field, "memory_id": memory_id,
                                                  "cosine": round(cosine_of(cosine), 4)})
            return match
        return None

    def candidates(self, agent_id: str, embedding: np.ndarray,
                   user_id: str = "") -> list[tuple[str, float]]:
        """(id, cosine) at or above the threshold, most similar first (of the agent's
        general knowledge and ``user_id``'s memories at least)."""
        found = self.index.similar(agent_id, embedding, self.threshold, user_id)
        keys, vectors = self._tail_rows(agent_id, user_id)
        if keys:
            scores = vectors @ embedding
            found += [(keys[i][1], float(scores[i])) for i in np.flatnonzero(
                scores >= self.threshold)]
            found.sort(key=lambda pair: -pair[1])
        return found

    def _tail_rows(self, agent_id: str,
                   user_id: str) -> tuple[list[tuple[int, str]], np.ndarray]:
        """Live rows of the writer's scopes written after the index's last event (earlier
        items of the same import batch; never another user's, which no write resolves to,
        and which other sidecars commit meanwhile on a shared store). Each embedding is
        read from the store once per batch."""
        floor = self.index.max_seq
        if floor != self._tail_floor:
            self._tail, self._tail_floor = {}, floor
        keys = self.vault.live_after(floor, agent_id, user_id)
        cached_keys, cached = self._tail.get((agent_id, user_id), (
            [], np.zeros((0, self.index.dim), dtype=np.float32)))
        if keys[: len(cached_keys)] != cached_keys:  # a row vanished: start over
            cached_keys, cached = [], np.zeros((0, self.index.dim), dtype=np.float32)
        new = keys[len(cached_keys) :]
        if new:
            by_seq = self.vault.embeddings_by_seq([seq for seq, _ in new])
            cached = np.vstack([cached, *(by_seq[seq][None, :] for seq, _ in new)])
            cached_keys = keys
        self._tail[(agent_id, user_id)] = (cached_keys, cached)
        return cached_keys, cached
