"""The memory vault: write gate, topic upserts, history, snapshot, hygiene, stats."""

from sidecar.vault.config import VaultConfig
from sidecar.vault.service import Vault
from sidecar.vault.snapshot import Snapshot, build_snapshot

__all__ = ["Snapshot", "Vault", "VaultConfig", "build_snapshot"]
