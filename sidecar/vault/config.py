"""The ``[vault]`` section: which write-gate steps run and with what limits, snapshot limits,
hygiene suggestions. Each knob's meaning and range is its field metadata (``sidecar.knobs``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.knobs import knob, unit

DEFAULT_NOISE_PHRASES: tuple[str, ...] = (
    "tick marker",
    "heartbeat",
    "runtime snapshot",
    "check-in",
    "burst tick",
    "no changes",
    "nothing to report",
    "status unchanged",
    "routine scan",
)


@dataclass(frozen=True, slots=True)
class VaultConfig:
    noise_gate: bool = field(default=True, metadata=knob(
        "Reject tier=LOG writes and texts that are only noise (a noise phrase and no "
        "content word)."))
    noise_phrases: tuple[str, ...] = field(default=DEFAULT_NOISE_PHRASES, metadata=knob(
        "Journal-only chatter (case-insensitive, whole words): a text containing one is "
        "rejected when, the phrases taken out, only stop words, status words and numbers "
        "remain."))
    length_gate: bool = field(default=True, metadata=knob(
        "Reject texts longer than max_chars."))
    max_chars: int = field(default=1200, metadata=knob(
        "Longest content the vault accepts (compress or split first).", ge=1))
    pii_gate: bool = field(default=True, metadata=knob(
        "Reject SSNs, Luhn-valid card numbers, passwords and credentials (also said in "
        "words), API keys and tokens; a channel's query context keeps no text it rejects."))
    duplicate_gate: bool = field(default=True, metadata=knob(
        "Do not store a near-duplicate of a live memory of the same scope."))
    duplicate_threshold: float = field(default=0.95, metadata=unit(
        "Cosine at or above which a new memory is a near-duplicate."))
    duplicate_numbers_must_match: bool = field(default=True, metadata=knob(
        'Two texts whose numbers differ ("3pm" / "4pm") are never duplicates.'))
    max_memories_per_scope: int = field(default=0, metadata=knob(
        "Capacity gate: most live memories per scope (0 = unlimited).", ge=0))
    topic_upsert: bool = field(default=True, metadata=knob(
        "A REGISTER write with a known topic_id updates that register in place."))
    snapshot_canon_limit: int = field(default=12, metadata=knob(
        "Most canon memories in a snapshot.", ge=0))
    snapshot_register_limit: int = field(default=8, metadata=knob(
        "Most registers in a snapshot.", ge=0))
    snapshot_max_chars: int = field(default=4000, metadata=knob(
        "Longest snapshot block (characters).", ge=1))
    stale_after_days: float = field(default=90.0, metadata=knob(
        "ProposeDeletions: not updated or accessed for this long is stale (0 = any age).",
        ge=0))
    stale_max_importance: float = field(default=0.4, metadata=unit(
        "ProposeDeletions: only memories at or below this importance are stale."))
    consolidation_floor: float = field(default=0.85, metadata=unit(
        "Default similarity floor of FindConsolidationCandidates."))


def no_blank_phrases(config: VaultConfig) -> list[tuple[str, str]]:
    """A blank noise phrase would match every text."""
    if any(not p.strip() for p in config.noise_phrases):
        return [("noise_phrases", "must not contain blank phrases")]
    return []
