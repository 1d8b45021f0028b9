"""protobuf <-> domain for the MemoryInjection service."""

from __future__ import annotations

from collections.abc import Sequence

from memsidecar.v1 import injection_pb2

from sidecar.api.validate import MAX_INJECT_TEXT_CHARS
from sidecar.errors import InvalidArgument
from sidecar.injection.history import Message, Role
from sidecar.injection.types import InjectedItem, Injection, InjectRequest, InjectStats
from sidecar.injection.types import Section as DomainSection
from sidecar.memory.validation import is_blank


def inject_request(msg: injection_pb2.InjectRequest) -> InjectRequest:
    """Validate and combine ``text`` / ``texts`` (joined with newlines, ``text`` first).

    ``channel_id`` is required. Empty text is refused unless the source is "system" (a
    retrigger, skipped anyway): an empty turn has nothing to retrieve for.
    """
    if not msg.channel_id.strip():
        raise InvalidArgument("channel_id is required (the conversation the injection "
                              "state belongs to)", field="channel_id", reason="REQUIRED")
    parts = [t for t in (msg.text, *msg.texts) if not is_blank(t)]
    text = "\n".join(parts)
    system = msg.source.strip().lower() == "system"
    if not text and not system:
        raise InvalidArgument("text (or texts) is required: the user text of this turn, "
                              "not blank", field="text", reason="REQUIRED")
    if len(text) > MAX_INJECT_TEXT_CHARS:
        raise InvalidArgument(f"text is {len(text)} characters; at most {MAX_INJECT_TEXT_CHARS}",
                              field="text", reason="TOO_LONG")
    return InjectRequest(agent_id=msg.agent_id, channel_id=msg.channel_id, text=text,
                         source=msg.source, turn=msg.turn, user_id=msg.user_id)


def inject_response(result: Injection) -> injection_pb2.InjectResponse:
    return injection_pb2.InjectResponse(
        block=result.block, items=[_item(i) for i in result.items],
        stats=_stats(result.stats), skip_reason=result.skip_reason, turn=result.turn,
    )


def _item(item: InjectedItem) -> injection_pb2.InjectedItem:
    section = (injection_pb2.SECTION_PINNED if item.section is DomainSection.PINNED
               else injection_pb2.SECTION_CONTEXTUAL)
    return injection_pb2.InjectedItem(
        id=item.memory.id, type=int(item.memory.type),
        content=item.content, section=section, score=item.score, cosine=item.cosine,
        importance=item.memory.importance, is_update=item.is_update,
        version=item.memory.version,
    )


def _stats(stats: InjectStats) -> injection_pb2.InjectStats:
    s = stats.stages_us
    return injection_pb2.InjectStats(
        candidates=stats.candidates, deduped_by_id=stats.deduped_by_id,
        deduped_semantic=stats.deduped_semantic, dropped_by_budget=stats.dropped_by_budget,
        pinned_count=stats.pinned_count, contextual_count=stats.contextual_count,
        elapsed_us=stats.elapsed_us, block_tokens=stats.block_tokens,
        below_min_score=stats.below_min_score,
        stages=injection_pb2.StageTimingsUs(
            embed_us=s.get("embed", 0), pinned_us=s.get("pinned", 0),
            search_us=s.get("search", 0), dedup_us=s.get("dedup", 0),
            budget_us=s.get("budget", 0), format_us=s.get("format", 0),
            persist_us=s.get("persist", 0),
        ),
    )


def messages(msgs: Sequence[injection_pb2.Message]) -> list[Message]:
    out: list[Message] = []
    for index, msg in enumerate(msgs):
        try:
            role = Role(msg.role)
        except ValueError:
            names = ", ".join(injection_pb2.Role.Name(r) for r in Role)
            raise InvalidArgument(
                f"messages[{index}].role must be one of {names} (got {msg.role})",
                field=f"messages[{index}].role", reason="BAD_ENUM",
            ) from None
        out.append(Message(role=role, content=msg.content))
    return out


def messages_to_pb(msgs: Sequence[Message]) -> list[injection_pb2.Message]:
    return [injection_pb2.Message(role=int(m.role), content=m.content)
            for m in msgs]
