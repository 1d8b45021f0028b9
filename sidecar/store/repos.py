"""Every repository over one database, built once (by the App) and handed to the features."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.store.contract import SqlStore
from sidecar.store.edges import EdgeRepo
from sidecar.store.memories import MemoryRepo
from sidecar.store.model_repo import ModelRepo
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
    def open(cls, db: SqlStore) -> Repositories:
        versions = VersionRepo(db)
        return cls(db=db, memories=MemoryRepo(db, versions), edges=EdgeRepo(db),
                   versions=versions, vault=VaultRepo(db), models=ModelRepo(db))
