"""Turn numbering, retries and the commit point, over gRPC against the real server."""

from __future__ import annotations

import logging

import grpc
import pytest
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import store_pb2 as s

from sidecar.embedding import Embedder
from tests.held import HeldEmbedder
from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put
from tests.injection.test_inject_api import CAT, DB_FACT, DB_QUESTION
from tests.waiting import wait_for


def refused(call: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        call()  # type: ignore[operator]
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert dict(err.value.trailing_metadata())["memsidecar-field"] == "turn"
    return err.value


def test_turns_only_grow_and_bad_turns_leave_the_channel_usable(serve: Serve) -> None:
    live = serve()
    fact = put(live, DB_FACT)
    assert inject(live, DB_QUESTION, turn=5).turn == 5
    backwards = refused(lambda: inject(live, DB_QUESTION, turn=4))
    assert "turn 4 is before the channel's last turn 5" in backwards.details()
    far = refused(lambda: inject(live, DB_QUESTION, turn=5 + 1_000_001))
    assert "more than 1000000 ahead" in far.details()
    refused(lambda: inject(live, DB_QUESTION, turn=2**64 - 1))
    assert inject(live, DB_QUESTION, turn=5 + 1_000_000).turn == 1_000_005
    nxt = inject(live, CAT)
    assert nxt.turn == 1_000_006 and nxt.skip_reason != ""
    assert refused(lambda: inject(live, DB_QUESTION, channel="fresh", turn=1_000_001))
    assert ids(inject(live, DB_QUESTION, channel="fresh", turn=1_000_000)) == [fact.id]


def test_same_turn_is_a_retry_recording_nothing_twice(serve: Serve) -> None:
    live = serve(max_injected_blocks_in_history=1)
    fact = put(live, DB_FACT)
    first = inject(live, DB_QUESTION, turn=1)
    again = inject(live, DB_QUESTION, turn=1)
    assert ids(first) == [fact.id] and again.block == first.block
    assert list(again.items) == list(first.items) and again.turn == 1
    live.close()  # writes what is queued; the retry survives a restart too
    live = serve(max_injected_blocks_in_history=1)
    after = inject(live, DB_QUESTION, turn=1)
    assert after.block == first.block and ids(after) == [fact.id]
    assert live.store.GetMemory(s.GetMemoryRequest(id=fact.id)).access_count == 1
    assert inject(live, DB_QUESTION).turn == 2


def test_expired_deadline_records_nothing(serve: Serve, embedder: Embedder,
                                          caplog: pytest.LogCaptureFixture) -> None:
    """Each call's query embedding is held until its deadline has passed, so the handler
    outlives it: the calls fail with DEADLINE_EXCEEDED and leave no turn, no cooldown and no
    access count. Until three handlers were held, each call has a longer deadline (on a
    loaded machine one may expire before its handler reaches the model)."""
    held = HeldEmbedder(embedder, "embed_tokens")
    live = serve(with_embedder=held)
    fact = put(live, DB_FACT)
    caplog.set_level(logging.INFO, logger="sidecar.injection.pipeline")
    timeout = 0.05
    while held.entered < 3:
        with pytest.raises(grpc.RpcError) as err:
            live.injection.Inject(inj.InjectRequest(channel_id="c1", text=DB_QUESTION),
                                  timeout=timeout)
        assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        timeout *= 2
    wait_for(lambda: live.server.admission.admitted == 0)  # the held handlers finished
    assert abandoned(caplog) >= 3, [r.getMessage() for r in caplog.records]
    live.close()  # writes anything queued
    live = serve()
    assert live.store.GetMemory(s.GetMemoryRequest(id=fact.id)).access_count == 0
    reply = inject(live, DB_QUESTION)
    assert reply.turn == 1 and ids(reply) == [fact.id]


def abandoned(caplog: pytest.LogCaptureFixture) -> int:
    return sum(r.getMessage().startswith("memory injection abandoned before commit")
               for r in caplog.records)
