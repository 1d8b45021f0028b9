"""Machine-readable reason codes of the vault (DomainError.reason, `memsidecar-reason`)."""

from __future__ import annotations

LOG_TIER = "LOG_TIER"  # tier=LOG is journal-only, never stored
NOISE = "LOG_NOISE"  # journal chatter ("heartbeat", "no changes", ...)
TOO_LONG = "TOO_LONG"  # over vault.max_chars
PII = "PII_DETECTED"  # a secret or personal identifier
CAPACITY = "SCOPE_FULL"  # the scope holds vault.max_memories_per_scope live memories
FORGOTTEN = "MEMORY_FORGOTTEN"  # the operation needs a live memory
ALREADY_CANON = "ALREADY_CANON"  # PromoteToCanon on a canon memory
