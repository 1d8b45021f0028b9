"""Stateless write gates on the text and tier of a draft: LOG noise, length, PII.

Each is a WriteGate (sidecar.memory.service): it raises a DomainError to reject and never
resolves a write to an existing memory. Messages name the field and never quote the content.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import numpy as np

from sidecar.errors import FailedPrecondition
from sidecar.memory.service import WriteGate
from sidecar.records import Memory, MemoryDraft, Tier
from sidecar.retrieval.lexical.tokenize import STOP_WORDS, tokenize
from sidecar.vault import reasons
from sidecar.vault.config import VaultConfig
from sidecar.vault.pii import find_pii, find_pii_in_name

log = logging.getLogger(__name__)


def _reject(reason: str, field: str, message: str) -> FailedPrecondition:
    log.info("write rejected", extra={"reason": reason, "field": field})
    return FailedPrecondition(message, reason=reason, field=field)


class NoiseGate:
    """Journal-only chatter never enters the vault: tier=LOG, or a text that is only noise.

    A text is noise when it contains a configured noise phrase and, once the phrases are taken
    out, holds no content word: every remaining word is a stop word, a status word
    (``STATUS_WORDS``: "ok", "all", "systems", "nominal", ...) or carries a digit (counters,
    timestamps). "Heartbeat: all systems nominal" is noise; "No changes for me, still enjoying
    my soda" carries facts and passes.
    """

    def __init__(self, phrases: Iterable[str]) -> None:
        words = sorted({p.strip().lower() for p in phrases if p.strip()}, key=len, reverse=True)
        alternatives = "|".join(re.escape(w) for w in words)
        self._pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE) \
            if words else None

    def check(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> Memory | None:
        if draft.tier == Tier.LOG:
            raise _reject(
                reasons.LOG_TIER, f"{field}.tier",
                f"{field}.tier is LOG: journal entries belong in the agent's journal, not the "
                "memory vault; store durable facts as CANON or mutable state as REGISTER",
            )
        match = self._pattern.search(draft.content) if self._pattern else None
        if match and self._only_noise(draft.content):
            raise _reject(
                reasons.NOISE, f"{field}.content",
                f"{field}.content reads as journal chatter (contains {match.group().lower()!r}, "
                "one of vault.noise_phrases, and nothing else worth remembering); store only "
                "what should be remembered",
            )
        return None

    def _only_noise(self, content: str) -> bool:
        assert self._pattern is not None
        rest = self._pattern.sub(" ", content)
        return not any(_is_content_word(w) for w in tokenize(rest))


# Words a status line is made of besides its noise phrase; they carry no fact on their own.
STATUS_WORDS: frozenset[str] = frozenset(
    """
    ack acknowledged active alive again all alright burst check checked complete completed
    done everything fine found good idle last marker nah nominal none normal nothing ok okay
    pass passed ping pong received report routine run running same scan scheduled since so
    still status system systems tick today unchanged update updates yep yes yesterday yet
    """.split()
)


def _is_content_word(word: str) -> bool:
    return not (word in STOP_WORDS or word in STATUS_WORDS or any(c.isdigit() for c in word))


class LengthGate:
    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    def check(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> Memory | None:
        if len(draft.content) > self.max_chars:
            raise _reject(
                reasons.TOO_LONG, f"{field}.content",
                f"{field}.content has {len(draft.content)} characters, more than the vault's "
                f"limit of {self.max_chars} (vault.max_chars); compress or split it first",
            )
        return None


class PiiGate:
    """Rejects secrets and personal identifiers in every stored free-text field, naming the
    field and the kind found, never the value. The names (source, topic, channel, agent) are
    read as names are at the API's edge (``find_pii_in_name``): a random-looking id is no
    secret there."""

    NAMES = ("source", "topic_id", "channel_id", "agent_id")

    def check(self, draft: MemoryDraft, embedding: np.ndarray, field: str) -> Memory | None:
        for name in ("content", *self.NAMES):
            value = getattr(draft, name)
            kinds = find_pii(value) if name == "content" else find_pii_in_name(value)
            if kinds:
                raise _reject(
                    reasons.PII, f"{field}.{name}",
                    f"{field}.{name} contains sensitive data ({', '.join(kinds)}); remove it "
                    "before storing (the value is not echoed)",
                )
        return None


def text_gates(config: VaultConfig) -> list[WriteGate]:
    """The enabled gates that read the text alone, in order: noise, length, PII."""
    gates: list[WriteGate] = []
    if config.noise_gate:
        gates.append(NoiseGate(config.noise_phrases))
    if config.length_gate:
        gates.append(LengthGate(config.max_chars))
    if config.pii_gate:
        gates.append(PiiGate())
    return gates
