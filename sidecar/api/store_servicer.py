"""MemoryStore servicer: validate -> domain call -> reply."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import grpc
from memsidecar.v1 import memory_pb2, store_pb2, store_pb2_grpc

from sidecar.api import convert
from sidecar.api.authorize import check_memory_scope, may_write_shared
from sidecar.api.import_stream import acknowledge, import_error
from sidecar.api.search_convert import search_query_from_pb, search_response_to_pb
from sidecar.api.status import grpc_errors
from sidecar.api.validate import check_request
from sidecar.errors import DomainError, FailedPrecondition, InvalidArgument
from sidecar.live import Live
from sidecar.memory.erasure import Eraser
from sidecar.memory.service import MemoryService
from sidecar.records import MemoryDraft
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Retriever

DEFAULT_SEARCH_LIMIT = Live.fixed(RetrievalConfig().search_limit)


class MemoryStoreServicer(store_pb2_grpc.MemoryStoreServicer):
    def __init__(
        self, memories: MemoryService, retriever: Retriever,
        search_limit: Live[int] = DEFAULT_SEARCH_LIMIT, eraser: Eraser | None = None,
    ) -> None:
        """``search_limit``: a Search's default candidates per source, read per Search.
        ``eraser``: ForgetUser and ForgetMemory's hard mode (None: refused)."""
        self.memories = memories
        self.retriever = retriever
        self._search_limit = search_limit
        self.eraser = eraser

    @grpc_errors
    def UpsertMemory(
        self, request: store_pb2.UpsertMemoryRequest, context: grpc.ServicerContext
    ) -> store_pb2.UpsertMemoryResponse:
        if not request.HasField("memory"):
            raise InvalidArgument("memory is required", field="memory")
        result = self.memories.upsert(convert.draft_from_pb(request.memory))
        return store_pb2.UpsertMemoryResponse(
            memory=convert.memory_to_pb(result.memory),
            created=result.created,
            deduplicated=result.deduplicated,
            unchanged=result.unchanged,
        )

    @grpc_errors
    def ImportMemories(
        self, request_iterator: Iterator[store_pb2.UpsertMemoryRequest],
        context: grpc.ServicerContext,
    ) -> store_pb2.ImportMemoriesResponse:
        broken: list[bool] = []

        def items() -> Iterator[MemoryDraft | DomainError]:
            try:
                for index, request in enumerate(request_iterator):
                    try:
                        check_request(request.memory, f"items[{index}].")
                        check_memory_scope(request.memory.agent_id, f"items[{index}].agent_id")
                        yield convert.draft_from_pb(request.memory, prefix=f"items[{index}]")
                    except DomainError as err:
                        yield err
            except grpc.RpcError:  # the client's stream broke or was cancelled
                broken.append(True)

        summary = self.memories.import_stream(items())
        if broken or summary.interrupted:
            context.set_trailing_metadata((("memsidecar-committed", str(summary.stored)),))
            context.abort(grpc.StatusCode.CANCELLED,
                          f"import interrupted: {summary.stored} items committed before the "
                          "stream ended; re-send the rest (ids make it idempotent)")
        errors = [import_error(i, memory_id, err) for i, memory_id, err in summary.errors]
        return store_pb2.ImportMemoriesResponse(
            received=summary.received,
            stored=summary.stored,
            rejected=len(errors),
            errors=errors,
            ids=summary.ids,
            deduplicated=summary.deduplicated,
        )

    def ImportMemoriesStream(
        self, request_iterator: Iterator[store_pb2.ImportBatch], context: grpc.ServicerContext,
    ) -> Iterator[store_pb2.ImportBatchAck]:
        return acknowledge(self.memories, request_iterator, context)

    @grpc_errors
    def GetMemory(
        self, request: store_pb2.GetMemoryRequest, context: grpc.ServicerContext
    ) -> memory_pb2.Memory:
        return convert.memory_to_pb(self.memories.get(request.id, request.agent_id))

    @grpc_errors
    def ForgetMemory(
        self, request: store_pb2.ForgetMemoryRequest, context: grpc.ServicerContext
    ) -> store_pb2.ForgetMemoryResponse:
        if request.hard:
            erased, _ = self._eraser().erase_memory(request.id, request.agent_id,
                                                    may_write_shared())
            return store_pb2.ForgetMemoryResponse(
                memory=convert.memory_to_pb(replace(erased, forgotten=True)), changed=True)
        memory, changed = self.memories.forget(request.id, request.source, request.agent_id,
                                               may_write_shared())
        return store_pb2.ForgetMemoryResponse(memory=convert.memory_to_pb(memory), changed=changed)

    @grpc_errors
    def ForgetUser(
        self, request: store_pb2.ForgetUserRequest, context: grpc.ServicerContext
    ) -> store_pb2.ForgetUserResponse:
        erased = self._eraser().forget_user(request.agent_id, request.user_id)
        return store_pb2.ForgetUserResponse(**erased.counts())

    def _eraser(self) -> Eraser:
        if self.eraser is None:
            raise FailedPrecondition("erasure is not available on this server")
        return self.eraser

    @grpc_errors
    def ListMemories(
        self, request: store_pb2.ListMemoriesRequest, context: grpc.ServicerContext
    ) -> store_pb2.ListMemoriesResponse:
        memories, token = self.memories.list(convert.list_query_from_pb(request))
        return store_pb2.ListMemoriesResponse(
            memories=[convert.memory_to_pb(m) for m in memories], next_page_token=token
        )

    @grpc_errors
    def AddEdge(
        self, request: store_pb2.AddEdgeRequest, context: grpc.ServicerContext
    ) -> memory_pb2.Edge:
        if not request.HasField("edge"):
            raise InvalidArgument("edge is required", field="edge")
        e = request.edge
        edge = self.memories.add_edge(
            e.source_id, e.target_id, convert.relation(e.relation, "edge.relation"),
            e.weight if e.HasField("weight") else None, request.agent_id, may_write_shared(),
        )
        return convert.edge_to_pb(edge)

    @grpc_errors
    def RemoveEdge(
        self, request: store_pb2.RemoveEdgeRequest, context: grpc.ServicerContext
    ) -> store_pb2.RemoveEdgeResponse:
        self.memories.remove_edge(
            request.source_id, request.target_id, convert.relation(request.relation, "relation"),
            request.agent_id, may_write_shared(),
        )
        return store_pb2.RemoveEdgeResponse()

    @grpc_errors
    def Search(
        self, request: store_pb2.SearchRequest, context: grpc.ServicerContext
    ) -> store_pb2.SearchResponse:
        query = search_query_from_pb(request, self._search_limit.get())
        result = self.retriever.search(query)
        return search_response_to_pb(result, request.debug)
