"""Vault servicer: validate -> domain call (sidecar.vault) -> reply.

``agent_id`` and ``scope`` are names, checked at the edge as in every other call
(``sidecar.api.validate``); only memory ids have the memory-id rule.
"""

from __future__ import annotations

import grpc
from memsidecar.v1 import vault_pb2, vault_pb2_grpc

from sidecar.api import convert, vault_convert
from sidecar.api.authorize import may_write_shared
from sidecar.api.status import grpc_errors
from sidecar.vault import Vault


class VaultServicer(vault_pb2_grpc.VaultServicer):
    def __init__(self, vault: Vault) -> None:
        self.vault = vault

    @grpc_errors
    def PromoteToCanon(
        self, request: vault_pb2.PromoteToCanonRequest, context: grpc.ServicerContext
    ) -> vault_pb2.PromoteToCanonResponse:
        memory = self.vault.promote_to_canon(request.id, request.canonical_text, request.agent_id,
                                             may_write_shared())
        return vault_pb2.PromoteToCanonResponse(memory=convert.memory_to_pb(memory))

    @grpc_errors
    def GetMemoryHistory(
        self, request: vault_pb2.GetMemoryHistoryRequest, context: grpc.ServicerContext
    ) -> vault_pb2.GetMemoryHistoryResponse:
        versions, total = self.vault.history(request.id, request.agent_id, request.limit)
        return vault_pb2.GetMemoryHistoryResponse(
            id=request.id, versions=[vault_convert.version_to_pb(v) for v in versions],
            total_versions=total,
        )

    @grpc_errors
    def GetSnapshot(
        self, request: vault_pb2.GetSnapshotRequest, context: grpc.ServicerContext
    ) -> vault_pb2.GetSnapshotResponse:
        return vault_convert.snapshot_to_pb(self.vault.snapshot(request.agent_id))

    @grpc_errors
    def FindConsolidationCandidates(
        self, request: vault_pb2.FindConsolidationCandidatesRequest,
        context: grpc.ServicerContext,
    ) -> vault_pb2.FindConsolidationCandidatesResponse:
        floor = request.floor if request.HasField("floor") else None
        pairs = self.vault.consolidation_candidates(request.scope, floor, request.limit)
        return vault_pb2.FindConsolidationCandidatesResponse(
            pairs=[vault_convert.pair_to_pb(p) for p in pairs]
        )

    @grpc_errors
    def ProposeDeletions(
        self, request: vault_pb2.ProposeDeletionsRequest, context: grpc.ServicerContext
    ) -> vault_pb2.ProposeDeletionsResponse:
        candidates = self.vault.propose_deletions(request.scope)
        return vault_pb2.ProposeDeletionsResponse(
            candidates=[vault_convert.candidate_to_pb(c) for c in candidates]
        )

    @grpc_errors
    def VaultStats(
        self, request: vault_pb2.VaultStatsRequest, context: grpc.ServicerContext
    ) -> vault_pb2.VaultStatsResponse:
        return vault_convert.stats_to_pb(self.vault.stats(request.page_size, request.page_token))
