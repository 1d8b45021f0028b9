"""Every repository over one database, built once (by the App) and handed to the features."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.store.contract import SqlStore
from sidecar.store.edges import EdgeRepo
from sidecar.store.memories import MemoryRepo
from sidecar.store.model_repo import ModelRepo
from sidecar.store.page_tokens import PageTokens
from sidecar.store.vault_repo import VaultRepo
from sidecar.store.versions import VersionRepo


@dataclass(frozen=True, slots=True)
class Repositories:
    db: SqlStore
    memories: MemoryRepo
    edges: EdgeRepo
    versions: VersionRepo
    vault: VaultRepo
    models: ModelRepo

    @classmethod
    def open(cls, db: SqlStore, page_key: bytes | None = None) -> Repositories:
        """``page_key``: the key of page tokens (None: one for this process)."""
        versions = VersionRepo(db)
        tokens = PageTokens(page_key)
        return cls(db=db, memories=MemoryRepo(db, versions, tokens),
                   edges=EdgeRepo(db),
                   versions=versions, vault=VaultRepo(db, tokens), models=ModelRepo(db))
