"""The client: every service on one channel."""

from __future__ import annotations

from memsidecar_client.health import HealthCalls
from memsidecar_client.importing import ImportCalls
from memsidecar_client.injection import InjectionCalls
from memsidecar_client.settings import SettingsCalls
from memsidecar_client.vault import VaultCalls


class Client(HealthCalls, ImportCalls, InjectionCalls, SettingsCalls, VaultCalls):
    """``with Client("127.0.0.1:50051") as c: c.inject("hi", channel_id="c1")``.

    Each attempt has a deadline (``timeout_s``, default 5 s). Failures raise a
    MemsidecarError subclass. UNAVAILABLE is retried with backoff for idempotent calls only:
    GetMemory, ListMemories, Search, PruneHistory, RenderTranscript, GetConfig and the
    Vault's reads (GetMemoryHistory, GetSnapshot, FindConsolidationCandidates,
    ProposeDeletions, VaultStats). ``wait_ready(timeout_s)`` waits for a starting sidecar.
    """
