"""Vault calls. The read-only ones are retried on UNAVAILABLE; PromoteToCanon is not."""

from __future__ import annotations

from collections.abc import Iterator

from memsidecar.v1 import vault_pb2

from memsidecar_client.transport import Transport


class VaultCalls(Transport):
    def promote_to_canon(self, id: str, canonical_text: str = "",
                         agent_id: str = "") -> vault_pb2.PromoteToCanonResponse:
        """Turn a REGISTER memory into CANON, optionally with a reworded text."""
        request = vault_pb2.PromoteToCanonRequest(id=id, canonical_text=canonical_text,
                                                  agent_id=agent_id)
        return self._call("PromoteToCanon", self.vault.PromoteToCanon, request,
                          idempotent=False)

    def memory_history(self, id: str, agent_id: str = "",
                       limit: int = 0) -> vault_pb2.GetMemoryHistoryResponse:
        """The latest ``limit`` recorded versions of a memory (0 = 100, at most 1000), oldest
        first; ``total_versions`` says how many there are in all."""
        request = vault_pb2.GetMemoryHistoryRequest(id=id, agent_id=agent_id, limit=limit)
        return self._call("GetMemoryHistory", self.vault.GetMemoryHistory, request,
                          idempotent=True)

    def snapshot(self, agent_id: str = "") -> vault_pb2.GetSnapshotResponse:
        """The always-injected block of an agent: canon memories and active registers."""
        return self._call("GetSnapshot", self.vault.GetSnapshot,
                          vault_pb2.GetSnapshotRequest(agent_id=agent_id), idempotent=True)

    def consolidation_candidates(self, scope: str = "", *, floor: float | None = None,
                                 limit: int = 0) -> vault_pb2.FindConsolidationCandidatesResponse:
        """Pairs of similar live memories of one scope (an agent id, "" = shared)."""
        request = vault_pb2.FindConsolidationCandidatesRequest(scope=scope, limit=limit)
        if floor is not None:
            request.floor = floor
        return self._call("FindConsolidationCandidates", self.vault.FindConsolidationCandidates,
                          request, idempotent=True)

    def propose_deletions(self, scope: str = "") -> vault_pb2.ProposeDeletionsResponse:
        """Memories of one scope that could be forgotten, each with a reason."""
        return self._call("ProposeDeletions", self.vault.ProposeDeletions,
                          vault_pb2.ProposeDeletionsRequest(scope=scope), idempotent=True)

    def vault_stats(self, page_size: int = 0,
                    page_token: str = "") -> vault_pb2.VaultStatsResponse:
        """Store-wide counts (live vs forgotten, history rows, database size) and one page of
        per-scope counts (``page_size`` scopes, 0 = 100, at most 1000); pass the reply's
        ``next_page_token`` for the next page."""
        request = vault_pb2.VaultStatsRequest(page_size=page_size, page_token=page_token)
        return self._call("VaultStats", self.vault.VaultStats, request, idempotent=True)

    def vault_stats_pages(self, page_size: int = 0) -> Iterator[vault_pb2.VaultStatsResponse]:
        """Every page of VaultStats in turn, until the last one."""
        token = ""
        while True:
            page = self.vault_stats(page_size, token)
            yield page
            token = page.next_page_token
            if not token:
                return
