"""Re-embed the store with another model in the background, then switch to it in one step.

The store's vectors and every query stay on the serving model until the switch. Meanwhile the
target model's vectors are staged in the database (``ModelRepo``), a batch per transaction: a
crash loses at most one batch and the next start resumes where the staging stopped. Rows
written meanwhile are picked up by the same loop (staged vectors carry the row's version).
The switch pauses writes, stages what is still missing, copies the staged vectors over in one
transaction, then swaps the search index's vectors and the query model with no search between.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sidecar.embedding import Embedder
from sidecar.embedding.models import ModelIdentity
from sidecar.memory.service import MemoryService
from sidecar.store.model_repo import ModelRepo

log = logging.getLogger(__name__)

# Swaps the live index's vectors and the query model (``HybridRetriever.switch_model``).
Switch = Callable[[Embedder], None]


class ReEmbed:
    def __init__(self, service: MemoryService, repo: ModelRepo, target: Embedder,
                 target_id: ModelIdentity, switch: Switch, batch_size: int = 64) -> None:
        self.service, self.repo, self.target = service, repo, target
        self.target_json = target_id.to_json()
        self.switch, self.batch_size = switch, batch_size
        self.done = threading.Event()  # set once the switch happened
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.repo.start_target(self.target_json)
        self._thread = threading.Thread(target=self._run_logged, name="re-embed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop after the batch in flight (what is staged stays for the next start)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def run(self, max_batches: int | None = None) -> bool:
        """Stage batches until none is pending, then switch; True once switched. Stops early
        after ``max_batches`` batches or on ``stop()``."""
        self.repo.start_target(self.target_json)
        begin, batches, last_log = time.perf_counter(), 0, 0.0
        while self.stage_batch():
            batches += 1
            if time.perf_counter() - last_log >= 2.0:
                last_log = time.perf_counter()
                self._log_progress(begin)
            if self._stop.is_set() or (max_batches is not None and batches >= max_batches):
                return False
        with self.service.writes_paused():
            while self.stage_batch():  # the rows written since the last batch
                pass
            self.repo.swap(self.target_json)
            self.switch(self.target)
        self._log_progress(begin, "re-embed switched")
        self.done.set()
        return True

    def progress(self) -> tuple[int, int]:
        """(rows staged, rows in the store) while re-embedding; (0, 0) once switched."""
        return (0, 0) if self.done.is_set() else self.repo.progress()

    def stage_batch(self) -> bool:
        """Embed and stage one batch of pending rows; False when nothing was pending."""
        rows = self.repo.pending(self.batch_size)
        if not rows:
            return False
        vectors = self.target.embed([content for _, _, content in rows], self.batch_size)
        self.repo.stage([(seq, version) for seq, version, _ in rows], vectors)
        return True

    def _run_logged(self) -> None:
        try:
            self.run()
        except Exception:
            log.exception("re-embed failed; the store keeps its vectors and the next start "
                          "resumes it")

    def _log_progress(self, begin: float, message: str = "re-embed progress") -> None:
        staged, total = self.repo.progress()
        log.info(message, extra={"model": self.target.name, "staged": staged, "total": total,
                                 "elapsed_ms": round((time.perf_counter() - begin) * 1000, 1)})
