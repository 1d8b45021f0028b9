"""The noise gate rejects a text only when it is nothing but noise: a noise phrase plus stop
words, status words and numbers. A sentence that carries a fact passes, whatever phrase it
contains."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.errors import FailedPrecondition
from sidecar.records import MemoryDraft, MemoryType, Tier
from sidecar.vault import reasons
from sidecar.vault.config import DEFAULT_NOISE_PHRASES
from sidecar.vault.gates import NoiseGate

REAL_NOISE = [
    "heartbeat",
    "Heartbeat OK",
    "Heartbeat: all systems nominal",
    "tick marker for burst 5",
    "burst tick 17 at 12:04:55",
    "Runtime snapshot: status unchanged",
    "check-in: nothing to report",
    "Check-in, no changes.",
    "Routine scan found nothing to report",
    "routine scan complete, no changes",
    "No changes.",
    "Status unchanged since 2026-11-22T10:00Z",
    "status unchanged since yesterday",
    "Nothing to report today, all fine",
    "Nah, no changes",
]

FACTS_WITH_NOISE_PHRASES = [
    "Nah, no changes for me. Still enjoying my soda and candy after dinner.",
    "No changes to the plan: the wedding is in Lisbon on June 3",
    "I skipped the routine scan because the printer is broken",
    "My daily check-in with Sarah moved to 9am",
    "Heartbeat monitor showed 72 bpm during the run",
    "Nothing to report on the mortgage, but the car loan is paid off",
    "The deploy is a runtime snapshot of the billing service",
    "I like the idea of designating specific check-in times for social media",
]


def check(gate: NoiseGate, content: str, tier: Tier = Tier.CANON) -> None:
    gate.check(MemoryDraft(content, MemoryType.FACT, tier=tier), np.zeros(0), "memory")


@pytest.fixture(scope="module")
def gate() -> NoiseGate:
    return NoiseGate(DEFAULT_NOISE_PHRASES)


@pytest.mark.parametrize("content", REAL_NOISE)
def test_real_noise_is_rejected(gate: NoiseGate, content: str) -> None:
    with pytest.raises(FailedPrecondition) as info:
        check(gate, content)
    assert info.value.reason == reasons.NOISE
    assert "vault.noise_phrases" in str(info.value)


@pytest.mark.parametrize("content", FACTS_WITH_NOISE_PHRASES)
def test_facts_containing_a_noise_phrase_pass(gate: NoiseGate, content: str) -> None:
    assert gate._pattern is not None and gate._pattern.search(content)  # the phrase is there
    check(gate, content)


def test_text_without_a_phrase_passes_even_if_all_status_words(gate: NoiseGate) -> None:
    check(gate, "all systems nominal")
    check(gate, "ok")


def test_log_tier_is_rejected_whatever_the_text(gate: NoiseGate) -> None:
    with pytest.raises(FailedPrecondition) as info:
        check(gate, "The user speaks French", Tier.LOG)
    assert info.value.reason == reasons.LOG_TIER


def test_no_phrases_rejects_nothing_but_log() -> None:
    check(NoiseGate([]), "heartbeat")
