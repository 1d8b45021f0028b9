"""Vault calls. The read-only ones are retried on UNAVAILABLE; PromoteToCanon is not."""

from __future__ import annotations

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

    def memory_history(self, id: str, agent_id: str = "") -> vault_pb2.GetMemoryHistoryResponse:
        """Every recorded version of a memory, oldest first."""
        request = vault_pb2.GetMemoryHistoryRequest(id=id, agent_id=agent_id)
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

    def vault_stats(self) -> vault_pb2.VaultStatsResponse:
        """Counts by scope, tier and type; live vs forgotten; history rows; database size."""
        return self._call("VaultStats", self.vault.VaultStats, vault_pb2.VaultStatsRequest(),
                          idempotent=True)
