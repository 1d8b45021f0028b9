"""GetInjectionTrace: request checks and the injection trace as protobuf."""

from __future__ import annotations

from memsidecar.v1 import injection_pb2, store_pb2

from sidecar.api.validate import check_count
from sidecar.errors import InvalidArgument
from sidecar.injection.trace import DropReason, TracedDrop, TracedItem, TraceTurn
from sidecar.injection.types import Section

MAX_LAST_N = 1000

_SECTIONS = {Section.PINNED: injection_pb2.SECTION_PINNED,
             Section.CONTEXTUAL: injection_pb2.SECTION_CONTEXTUAL}
_REASONS = {
    DropReason.FLOOR: injection_pb2.DROP_REASON_FLOOR,
    DropReason.COOLDOWN: injection_pb2.DROP_REASON_COOLDOWN,
    DropReason.DUPLICATE: injection_pb2.DROP_REASON_DUPLICATE,
    DropReason.SEMANTIC: injection_pb2.DROP_REASON_SEMANTIC_DUPLICATE,
    DropReason.BUDGET: injection_pb2.DROP_REASON_BUDGET,
    DropReason.CAPTURE_IN_VIEW: injection_pb2.DROP_REASON_CAPTURE_IN_VIEW,
}


def trace_request(msg: injection_pb2.GetInjectionTraceRequest) -> tuple[str, int]:
    """(channel_id, last_n) of a valid request."""
    if not msg.channel_id.strip():
        raise InvalidArgument("channel_id is required (the conversation whose injection "
                              "trace to read)", field="channel_id", reason="REQUIRED")
    check_count(msg.last_n, "last_n", MAX_LAST_N)
    return msg.channel_id, msg.last_n


def trace_response(channel_id: str, turns: list[TraceTurn],
                   ) -> injection_pb2.GetInjectionTraceResponse:
    return injection_pb2.GetInjectionTraceResponse(
        channel_id=channel_id, turns=[_turn(t) for t in turns])


def _turn(turn: TraceTurn) -> injection_pb2.TraceTurn:
    return injection_pb2.TraceTurn(
        turn=turn.turn, at_us=turn.at_us, agent_id=turn.agent_id, query=turn.query,
        query_chars=turn.query_chars, skip_reason=turn.skip_reason,
        injected=[_item(i) for i in turn.injected], dropped=[_drop(d) for d in turn.dropped],
        dropped_omitted=turn.dropped_omitted, elapsed_us=turn.elapsed_us,
        context=[injection_pb2.ContextTurn(turn=t, terms_weight=terms, vector_weight=vector,
                                           reply=reply)
                 for t, terms, vector, reply in turn.context.turns],
        context_gate=turn.context.gate,
        focus_anchors=list(turn.focus_anchors), focus_offered=list(turn.focus_offered),
    )


def _item(item: TracedItem) -> injection_pb2.TracedItem:
    return injection_pb2.TracedItem(
        id=item.memory_id, section=_SECTIONS[item.section], cosine=item.cosine,
        score=item.score,
        sources=[store_pb2.SourceRank(name=r.name, rank=r.rank, weight=r.weight)
                 for r in item.ranks])


def _drop(drop: TracedDrop) -> injection_pb2.DroppedItem:
    return injection_pb2.DroppedItem(id=drop.memory_id, reason=_REASONS[drop.reason],
                                     cosine=drop.cosine, score=drop.score,
                                     shown_in_turn=drop.shown_in_turn,
                                     duplicate_of=drop.duplicate_of)
