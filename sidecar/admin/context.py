"""What the pages work with: the App's domain services, the request, and a CSRF token for
its forms."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.admin.dismissed import Dismissed
from sidecar.admin.suggestions import SuggestionCache
from sidecar.admin.web import Request
from sidecar.config.store import ConfigStore
from sidecar.injection.pipeline import Injector
from sidecar.memory.service import MemoryService
from sidecar.retrieval.contract import Retriever
from sidecar.vault import Vault


@dataclass(frozen=True, slots=True)
class Services:
    memories: MemoryService
    retriever: Retriever
    settings: ConfigStore
    vault: Vault
    injector: Injector
    dismissed: Dismissed
    suggestions: SuggestionCache


@dataclass(frozen=True, slots=True)
class Ctx:
    """One request as a page sees it."""

    services: Services
    request: Request
    csrf: str  # the hidden field of every form the page shows
