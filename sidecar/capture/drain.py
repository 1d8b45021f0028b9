"""Writes the pending captures as memories, off the reply path, through every vault gate.

One daemon thread, woken after each turn that recorded a capture and every ``POLL_S`` (the
captures other sidecars of a shared store recorded, and those a crash left pending). Each row
is one transaction: the row is claimed (only one sidecar writes it), the memory written (the
gates decide as for any write), and the row's text erased. A refused write is counted and
logged by its reason code, never with its text.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

import numpy as np

from sidecar import after_reply
from sidecar.capture.modes import CAPTURE_SOURCE
from sidecar.capture.repo import DEDUPLICATED, STORED, CaptureRepo, Pending
from sidecar.embedding import Embedder
from sidecar.errors import DomainError, Unavailable
from sidecar.memory.service import MemoryService, UpsertResult
from sidecar.records import MemoryDraft, MemoryType, Restored, Tier

log = logging.getLogger(__name__)

POLL_S = 1.0
BATCH = 64
# Pending captures at most: beyond, a turn's capture is refused (QUEUE_FULL) until the drain
# catches up, so a drain slower than the turns never grows the store's backlog without end.
MAX_PENDING = 10_000
# How a captured turn is indexed (its vector; the lexical index reads the turn itself): "turn":
# the turn alone (a user turn: Inject's query embedding, reused); "pair": the turn followed by
# the message before it in the channel. On the LongMemEval replay (bench/capture_replay.py)
# "pair" lost recall (turn R@10 of Inject 0.558 vs 0.601, Search 0.680 vs 0.679): kept as the
# measured alternative, "turn" is the default.
INDEX_MODES = ("turn", "pair")


def text_to_index(row: Pending, index: str) -> str:
    if index == "pair" and row.context:
        return f"{row.content}\n{row.context}"
    return row.content


class Drain:
    def __init__(self, repo: CaptureRepo, memories: MemoryService, embedder: Embedder,
                 index: str = "turn", max_pending: int = MAX_PENDING) -> None:
        if index not in INDEX_MODES:
            raise ValueError(f"index must be one of {INDEX_MODES}")
        self.repo = repo
        self.memories = memories
        self.embedder = embedder
        self.index = index
        self.max_pending = max_pending
        self.waiting = 0  # pending rows: counted in the store after each drain, + the added
        self.outcomes: Counter[str] = Counter()  # stored, deduplicated, or a reason code
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one drain at a time (the thread or ``flush``)
        self._thread: threading.Thread | None = None

    def full(self) -> bool:
        """Whether the backlog of pending captures is at ``max_pending``."""
        return self.waiting >= self.max_pending

    def queued(self, rows: int) -> None:
        """``rows`` pending captures were just recorded."""
        self.waiting += rows

    def start(self) -> None:
        self.waiting = self.repo.pending_count()
        self._thread = threading.Thread(target=self._run, name="capture-drain", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Drain soon: once the current call's reply is sent (``sidecar.after_reply``)."""
        after_reply.later(self._wanted.set)

    def flush(self) -> int:
        """Write every pending capture now (in the caller's thread); returns how many."""
        done = 0
        while True:
            batch = self._drain_once()
            done += batch
            if batch < BATCH:
                self.waiting = self.repo.pending_count()
                return done

    def close(self) -> None:
        self._stop.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wanted.wait(POLL_S)
            self._wanted.clear()
            if self._stop.is_set():
                return
            try:
                self.flush()
            except Unavailable as err:
                log.warning("store away: captures stay pending until it is back",
                            extra={"error": err.message})
            except Exception:
                log.exception("capture drain failed; the captures stay pending")

    def _drain_once(self) -> int:
        with self._lock:
            rows = self.repo.pending(BATCH)
            texts = [text_to_index(r, self.index) for r in rows]
            todo = [i for i, r in enumerate(rows)
                    if r.embedding is None or texts[i] != r.content]
            vectors = self.embedder.embed([texts[i] for i in todo]) if todo else None
            for n, row in enumerate(rows):
                vector = row.embedding
                if vectors is not None and n in todo:
                    vector = vectors[todo.index(n)]
                assert vector is not None
                self._write(row, vector)
            return len(rows)

    def _write(self, row: Pending, vector: np.ndarray) -> None:
        draft = MemoryDraft(
            content=row.content, type=MemoryType.OBSERVATION, id=row.memory_id,
            source=CAPTURE_SOURCE, channel_id=row.channel_id, agent_id=row.agent_id,
            tier=Tier.CANON, restored=Restored(row.at_us, row.at_us, 1, False),
            user_id=row.user_id, channel_private=not row.user_id)

        def claim() -> bool:
            return self.repo.settle(row, STORED, row.memory_id)

        def after(result: UpsertResult) -> None:
            if result.deduplicated:  # the memory it says the same as is held instead
                self.repo.mark(row, DEDUPLICATED, result.memory.id)

        try:
            result = self.memories.write_claimed(draft, vector, claim, after)
        except DomainError as err:
            if self.repo.settle_now(row, err.reason):
                self._count(err.reason, row)
            return
        if result is not None:
            self._count(DEDUPLICATED if result.deduplicated else STORED, row)

    def _count(self, outcome: str, row: Pending) -> None:
        self.outcomes[outcome] += 1
        if outcome not in (STORED, DEDUPLICATED):
            log.info("capture refused", extra={"reason": outcome, "channel": row.channel_id,
                                               "turn": row.turn, "role": row.role,
                                               "refused": self.outcomes[outcome]})
