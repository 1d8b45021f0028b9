"""The [vault] section: which write-gate steps run and with what limits, snapshot limits.

One frozen dataclass with the defaults; the TOML loader (config issue) fills it from the
``[vault]`` table. ``validate()`` names the offending key.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from sidecar.errors import InvalidArgument

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
    # LOG-tier noise: reject tier=LOG and texts containing one of ``noise_phrases``.
    noise_gate: bool = True
    noise_phrases: tuple[str, ...] = DEFAULT_NOISE_PHRASES
    # Length gate: longest content the vault accepts ("compress or split first").
    length_gate: bool = True
    max_chars: int = 1200
    # PII guard: SSNs, Luhn-valid card numbers, passwords, API keys/tokens, secrets.
    pii_gate: bool = True
    # Near-duplicate gate: cosine to a live memory of the same scope at or above this.
    duplicate_gate: bool = True
    duplicate_threshold: float = 0.95
    # Second signal: two texts whose numbers differ ("3pm" / "4pm") are never duplicates.
    duplicate_numbers_must_match: bool = True
    # Capacity gate: most live memories per scope (agent_id; '' = shared). 0 = unlimited.
    max_memories_per_scope: int = 0
    # REGISTER writes with a known topic_id update that register in place.
    topic_upsert: bool = True
    # Snapshot (GetSnapshot, pinned_source = "snapshot").
    snapshot_canon_limit: int = 12
    snapshot_register_limit: int = 8
    snapshot_max_chars: int = 4000
    # Hygiene suggestions (ProposeDeletions): stale = not updated or accessed for this long.
    stale_after_days: float = 90.0
    stale_max_importance: float = 0.4
    # Default similarity floor of FindConsolidationCandidates.
    consolidation_floor: float = 0.85

    def validate(self) -> VaultConfig:
        """Return self, or raise InvalidArgument naming the bad ``vault.<key>``."""
        for name in ("duplicate_threshold", "stale_max_importance", "consolidation_floor"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                _bad(name, f"must be between 0 and 1 (got {value})")
        for name in ("max_chars", "snapshot_max_chars"):
            if getattr(self, name) < 1:
                _bad(name, f"must be at least 1 (got {getattr(self, name)})")
        for name in ("max_memories_per_scope", "snapshot_canon_limit", "snapshot_register_limit"):
            if getattr(self, name) < 0:
                _bad(name, f"must be 0 or more (got {getattr(self, name)})")
        if self.stale_after_days <= 0:
            _bad("stale_after_days", f"must be positive (got {self.stale_after_days})")
        if any(not p.strip() for p in self.noise_phrases):
            _bad("noise_phrases", "must not contain blank phrases")
        return self


def _bad(name: str, problem: str) -> None:
    raise InvalidArgument(f"vault.{name} {problem}", field=f"vault.{name}", reason="BAD_CONFIG")


KEYS = tuple(f.name for f in fields(VaultConfig))
