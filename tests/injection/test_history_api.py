"""PruneHistory, RenderTranscript and ResetChannel validation over gRPC."""

from __future__ import annotations

import grpc
import pytest
from memsidecar.v1 import injection_pb2 as inj

from tests.injection.conftest import Serve

BLOCK = "[Context from memory]\n[Relevant to this message]\n[Fact] x"


def msg(role: int, content: str) -> inj.Message:
    return inj.Message(role=role, content=content)


def history(blocks: int) -> list[inj.Message]:
    out = []
    for i in range(blocks):
        out += [msg(inj.ROLE_USER, BLOCK), msg(inj.ROLE_USER, f"q{i}"),
                msg(inj.ROLE_ASSISTANT, f"a{i}")]
    return out


def test_prune_uses_agent_config_when_unset(serve: Serve) -> None:
    live = serve(max_injected_blocks_in_history=2)
    reply = live.injection.PruneHistory(inj.PruneHistoryRequest(messages=history(3)))
    assert list(reply.removed_indices) == [0, 3]
    assert [m.content for m in reply.messages] == ["q0", "a0", "q1", "a1", BLOCK, "q2", "a2"]


def test_prune_explicit_max_keep(serve: Serve) -> None:
    live = serve()
    zero = live.injection.PruneHistory(inj.PruneHistoryRequest(messages=history(3), max_keep=0))
    assert list(zero.removed_indices) == [0, 3, 6] and len(zero.messages) == 6
    keep = live.injection.PruneHistory(inj.PruneHistoryRequest(messages=history(3), max_keep=5))
    assert list(keep.removed_indices) == [] and len(keep.messages) == 9
    default = live.injection.PruneHistory(inj.PruneHistoryRequest(messages=history(3)))
    assert list(default.removed_indices) == [0]  # default 3


def test_render_transcript(serve: Serve) -> None:
    live = serve()
    messages = [msg(inj.ROLE_SYSTEM, "rules"), *history(1), msg(inj.ROLE_TOOL, "ok")]
    reply = live.injection.RenderTranscript(inj.RenderTranscriptRequest(messages=messages))
    assert reply.transcript == "System: rules\nUser: q0\nAssistant: a0\nTool: ok"
    assert reply.blocks_skipped == 1


@pytest.mark.parametrize("call", ["PruneHistory", "RenderTranscript"])
def test_bad_role_names_the_field(serve: Serve, call: str) -> None:
    live = serve()
    messages = [msg(inj.ROLE_USER, "a"), msg(inj.ROLE_UNSPECIFIED, "b")]
    request = (inj.PruneHistoryRequest(messages=messages) if call == "PruneHistory"
               else inj.RenderTranscriptRequest(messages=messages))
    with pytest.raises(grpc.RpcError) as err:
        getattr(live.injection, call)(request)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "messages[1].role" in err.value.details()


def test_reset_requires_channel(serve: Serve) -> None:
    with pytest.raises(grpc.RpcError) as err:
        serve().injection.ResetChannel(inj.ResetChannelRequest())
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "channel_id" in err.value.details()
