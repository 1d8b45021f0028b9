"""MemoryInjection calls. Prune and Render are pure and retried; Inject records state: never."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memsidecar.v1 import injection_pb2

from memsidecar_client.messages import MessageLike, to_messages
from memsidecar_client.transport import Transport


class InjectionCalls(Transport):
    def inject(self, text: str | Sequence[str], *, channel_id: str, agent_id: str = "",
               source: str = "user", turn: int = 0,
               user_id: str = "") -> injection_pb2.InjectResponse:
        """The ``[Context from memory]`` block for the coming turn (``block`` empty when none).
        A list of texts is a coalesced batch. ``user_id``: the end user who wrote the turn
        (the block may then hold that user's private memories; a captured turn is theirs)."""
        request = injection_pb2.InjectRequest(agent_id=agent_id, channel_id=channel_id,
                                              source=source, turn=turn, user_id=user_id)
        if isinstance(text, str):
            request.text = text
        else:
            request.texts.extend(text)
        return self._call("Inject", self.injection.Inject, request, idempotent=False)

    def prune_history(self, history: Iterable[MessageLike], *, max_keep: int | None = None,
                      channel_id: str = "", agent_id: str = "",
                      ) -> injection_pb2.PruneHistoryResponse:
        """Drop the oldest blocks so ``max_keep`` remain once the incoming one is appended
        (unset: the agent's ``max_injected_blocks_in_history``). With ``channel_id`` the
        sidecar learns which of that channel's blocks the history still holds: a memory whose
        blocks are all gone may be injected again (``released_turns``)."""
        request = injection_pb2.PruneHistoryRequest(messages=to_messages(history),
                                                    agent_id=agent_id, channel_id=channel_id)
        if max_keep is not None:
            request.max_keep = max_keep
        return self._call("PruneHistory", self.injection.PruneHistory, request, idempotent=True)

    def render_transcript(self, history: Iterable[MessageLike],
                          ) -> injection_pb2.RenderTranscriptResponse:
        request = injection_pb2.RenderTranscriptRequest(messages=to_messages(history))
        return self._call("RenderTranscript", self.injection.RenderTranscript, request,
                          idempotent=True)

    def reset_channel(self, channel_id: str, agent_id: str = "") -> bool:
        """Forget a channel's injection state; True when it had some. Only the agent that
        first injected on the channel may reset it."""
        reply = self._call("ResetChannel", self.injection.ResetChannel,
                           injection_pb2.ResetChannelRequest(channel_id=channel_id,
                                                             agent_id=agent_id),
                           idempotent=False)
        return bool(reply.existed)

    def get_injection_trace(self, channel_id: str, *, last_n: int = 0, agent_id: str = "",
                            ) -> injection_pb2.GetInjectionTraceResponse:
        """The channel's last ``last_n`` committed turns (0 = all held), oldest first: the
        query, what was injected and what was dropped, and why."""
        request = injection_pb2.GetInjectionTraceRequest(channel_id=channel_id, last_n=last_n,
                                                         agent_id=agent_id)
        return self._call("GetInjectionTrace", self.injection.GetInjectionTrace, request,
                          idempotent=True)
