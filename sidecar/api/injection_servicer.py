"""MemoryInjection servicer: validate -> domain call -> reply."""

from __future__ import annotations

import grpc
from memsidecar.v1 import injection_pb2, injection_pb2_grpc

from sidecar.api import injection_convert as convert
from sidecar.api.status import grpc_errors
from sidecar.api.trace_convert import trace_request, trace_response
from sidecar.auth import identity
from sidecar.errors import InvalidArgument
from sidecar.injection.history import prune_history, render_transcript
from sidecar.injection.owners import ChannelOwners
from sidecar.injection.pipeline import Injector
from sidecar.injection.types import Abandoned


class MemoryInjectionServicer(injection_pb2_grpc.MemoryInjectionServicer):
    def __init__(self, injector: Injector, owners: ChannelOwners) -> None:
        self.injector = injector
        self.owners = owners

    @grpc_errors
    def Inject(
        self, request: injection_pb2.InjectRequest, context: grpc.ServicerContext
    ) -> injection_pb2.InjectResponse:
        inject = convert.inject_request(request)
        claimed = self.owners.claim(inject.channel_id, inject.agent_id)
        try:
            result = self.injector.inject(inject)
        except BaseException as failed:
            if claimed:  # a failed call leaves no trace, not even the channel's owner
                self.owners.release(inject.channel_id)
            if not isinstance(failed, Abandoned):
                raise
            expired = context.time_remaining() == 0
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED if expired
                          else grpc.StatusCode.CANCELLED, str(failed))
        return convert.inject_response(result)

    @grpc_errors
    def PruneHistory(
        self, request: injection_pb2.PruneHistoryRequest, context: grpc.ServicerContext
    ) -> injection_pb2.PruneHistoryResponse:
        messages = convert.messages(request.messages)
        if request.HasField("max_keep"):
            max_keep = request.max_keep
        else:
            max_keep = self.injector.config.get().injection_for(
                request.agent_id).max_injected_blocks_in_history
        channel = request.channel_id.strip()
        if channel:  # the channel's state changes: its owner's, as for ResetChannel
            self.owners.check(request.channel_id, request.agent_id)
        pruned = prune_history(messages, max_keep, self.injector.is_block)
        released = (self.injector.observe(request.channel_id, pruned.messages, max_keep,
                                          request.agent_id) if channel else [])
        return injection_pb2.PruneHistoryResponse(
            messages=convert.messages_to_pb(pruned.messages), removed_indices=pruned.removed,
            released_turns=released,
        )

    @grpc_errors
    def RenderTranscript(
        self, request: injection_pb2.RenderTranscriptRequest, context: grpc.ServicerContext
    ) -> injection_pb2.RenderTranscriptResponse:
        transcript = render_transcript(convert.messages(request.messages),
                                       self.injector.is_block)
        return injection_pb2.RenderTranscriptResponse(
            transcript=transcript.text, blocks_skipped=transcript.blocks_skipped
        )

    @grpc_errors
    def ResetChannel(
        self, request: injection_pb2.ResetChannelRequest, context: grpc.ServicerContext
    ) -> injection_pb2.ResetChannelResponse:
        if not request.channel_id.strip():
            raise InvalidArgument("channel_id is required", field="channel_id",
                                  reason="REQUIRED")
        self.owners.check(request.channel_id, request.agent_id)
        existed = self.injector.reset(request.channel_id)
        self.owners.release(request.channel_id)
        return injection_pb2.ResetChannelResponse(existed=existed)

    @grpc_errors
    def GetInjectionTrace(
        self, request: injection_pb2.GetInjectionTraceRequest, context: grpc.ServicerContext
    ) -> injection_pb2.GetInjectionTraceResponse:
        channel_id, last_n = trace_request(request)
        who = identity.current()
        if who is None or not who.operator:  # the operator reads any channel's trace
            self.owners.check(channel_id, request.agent_id)
        return trace_response(channel_id, self.injector.trace.last(channel_id, last_n))
