"""The vault's text gates (noise, length, PII) on a text before anything of it is stored.

They are cheap (regular expressions), so they run on the reply path: a captured turn they
refuse never reaches the store, not even as a pending row, and a turn or reply the PII gate
refuses is kept in no channel's query context. The gates that need the store or an embedding
(near-duplicate, capacity) run in the capture drain, off the reply path.
"""

from __future__ import annotations

import threading

import numpy as np

from sidecar.errors import DomainError
from sidecar.live import Live
from sidecar.memory.service import WriteGate
from sidecar.records import MemoryDraft
from sidecar.vault.config import VaultConfig
from sidecar.vault.gates import text_gates
from sidecar.vault.pii import find_pii

_NO_EMBEDDING = np.zeros(0, dtype=np.float32)  # the text gates never read it


class Screen:
    def __init__(self, config: Live[VaultConfig]) -> None:
        self._config = config
        self._built_for: VaultConfig | None = None
        self._gates: list[WriteGate] = []
        self._lock = threading.Lock()

    def refusal(self, draft: MemoryDraft) -> str:
        """The reason code of the first gate that refuses ``draft``; '' = it passes."""
        for gate in self._current():
            try:
                gate.check(draft, _NO_EMBEDDING, "capture")
            except DomainError as err:
                return err.reason or type(err).__name__
        return ""

    def holds_secret(self, text: str) -> bool:
        """Whether the PII gate (``vault.pii_gate``) refuses ``text`` as a memory's content."""
        return bool(text) and self._config.get().pii_gate and bool(find_pii(text))

    def _current(self) -> list[WriteGate]:
        config = self._config.get()
        with self._lock:
            if config is not self._built_for:
                self._gates, self._built_for = text_gates(config), config
            return self._gates
