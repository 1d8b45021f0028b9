"""GetInjectionTrace over gRPC: each committed turn once, what it injected and what it dropped."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import grpc
import pytest
from memsidecar.v1 import injection_pb2 as inj

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.injection.state_config import ChannelStateConfig
from sidecar.injection.trace import MAX_QUERY_CHARS
from sidecar.injection.types import Abandoned, InjectRequest
from sidecar.records import MemoryType
from sidecar.vault.config import VaultConfig
from tests.conftest import Running, settings_for
from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put

DB_FACT = "We chose PostgreSQL 16 as the main database for the billing service."
DB_QUESTION = "Which database does the billing service use?"
DEPLOY = "The deploy pipeline runs on GitHub Actions every night at 2am."
DEPLOY_TOO = "Every night at 2am, the deploy pipeline runs on GitHub Actions."
CAT = "The office cat sleeps on the windowsill every afternoon."
R = inj.DropReason


def trace(live: Running, channel: str = "c1", last_n: int = 0,
          agent_id: str = "") -> list[inj.TraceTurn]:
    return list(live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(
        channel_id=channel, last_n=last_n, agent_id=agent_id)).turns)


def drops(turn: inj.TraceTurn) -> list[tuple[str, int]]:
    return [(d.id, d.reason) for d in turn.dropped]


def test_three_turns_match_their_replies(serve: Serve) -> None:
    live = serve()
    fact = put(live, DB_FACT)
    put(live, CAT)
    replies = [inject(live, DB_QUESTION), inject(live, "What is the weather like on Mars?"),
               inject(live, "Where does the office cat sleep?")]
    turns = trace(live)
    assert [t.turn for t in turns] == [r.turn for r in replies] == [1, 2, 3]
    assert turns[0].query == DB_QUESTION and turns[0].query_chars == len(DB_QUESTION)
    for turn, reply in zip(turns, replies, strict=True):
        assert [i.id for i in turn.injected] == ids(reply)
        assert turn.skip_reason == reply.skip_reason
        for traced, item in zip(turn.injected, reply.items, strict=True):
            assert traced.cosine == pytest.approx(item.cosine)
            assert traced.score == pytest.approx(item.score)
            assert traced.section == inj.SECTION_CONTEXTUAL
    first = turns[0].injected[0]
    assert first.id == fact.id
    ranks = {s.name: s.rank for s in first.sources}
    assert ranks["vector"] == 1 and ranks["lexical"] >= 1
    assert not turns[1].injected and turns[1].skip_reason  # nothing injected: still a turn
    assert [t.turn for t in trace(live, last_n=2)] == [2, 3]


def test_drop_reasons(serve: Serve) -> None:
    live = serve(max_total=1, semantic_threshold=0.9)
    deploy = put(live, DEPLOY)
    twin = put(live, DEPLOY_TOO)
    put(live, "The deploy pipeline of the mobile app runs on Bitrise on demand.")
    cat = put(live, CAT)
    inject(live, "When does the deploy pipeline run?")
    inject(live, "When does the deploy pipeline run?")
    first, second = trace(live)
    (kept,) = first.injected
    assert kept.id in {deploy.id, twin.id}
    other = twin.id if kept.id == deploy.id else deploy.id
    assert (other, R.DROP_REASON_SEMANTIC_DUPLICATE) in drops(first)
    assert (cat.id, R.DROP_REASON_FLOOR) in drops(first)
    assert any(reason == R.DROP_REASON_BUDGET for _, reason in drops(first))
    assert (kept.id, R.DROP_REASON_COOLDOWN) in drops(second)


def test_same_memory_pinned_and_contextual(serve: Serve) -> None:
    live = serve(ambient_enabled=True, pinned_types=(MemoryType.FACT,))
    fact = put(live, DB_FACT)
    inject(live, DB_QUESTION)
    (turn,) = trace(live)
    assert [(i.id, i.section) for i in turn.injected] == [(fact.id, inj.SECTION_PINNED)]
    assert not turn.injected[0].sources  # pinned: not ranked by a search
    assert drops(turn) == []  # each memory once a turn: where it went, not its other copy


def test_retry_records_once_and_reset_clears(serve: Serve) -> None:
    live = serve()
    put(live, DB_FACT)
    inject(live, DB_QUESTION, turn=1)
    inject(live, DB_QUESTION, turn=1)  # a retry: the committed reply again
    assert [t.turn for t in trace(live)] == [1]
    live.injection.ResetChannel(inj.ResetChannelRequest(channel_id="c1"))
    assert trace(live) == []


def test_abandoned_turn_records_nothing(serve: Serve) -> None:
    live = serve()
    put(live, DB_FACT)
    request = InjectRequest(agent_id="", channel_id="c1", text=DB_QUESTION)
    with pytest.raises(Abandoned):
        live.server.app.injector.inject(request, alive=lambda: False)
    assert trace(live) == []


def test_long_query_is_bounded(serve: Serve) -> None:
    live = serve()
    text = "billing database " * 200
    inject(live, text)
    (turn,) = trace(live)
    assert turn.query == text[:MAX_QUERY_CHARS] and turn.query_chars == len(text)


def test_bad_requests(serve: Serve) -> None:
    live = serve()
    inject(live, DB_QUESTION, agent_id="ada")
    cases = [(inj.GetInjectionTraceRequest(), grpc.StatusCode.INVALID_ARGUMENT, "channel_id"),
             (inj.GetInjectionTraceRequest(channel_id="c1", agent_id="ada", last_n=1001),
              grpc.StatusCode.INVALID_ARGUMENT, "last_n"),
             (inj.GetInjectionTraceRequest(channel_id="c1", agent_id="bob"),
              grpc.StatusCode.PERMISSION_DENIED, "another agent"),
             (inj.GetInjectionTraceRequest(channel_id="c\x01"),
              grpc.StatusCode.INVALID_ARGUMENT, "control character")]
    for request, code, words in cases:
        with pytest.raises(grpc.RpcError) as err:
            live.injection.GetInjectionTrace(request)
        assert err.value.code() == code  # type: ignore[attr-defined]
        assert words in err.value.details()  # type: ignore[attr-defined]
    assert len(trace(live, agent_id="ada")) == 1


@pytest.fixture
def short_ring(config: ServerConfig, embedder: Embedder) -> Iterator[Running]:
    settings = settings_for(config, vault=VaultConfig(duplicate_gate=False),
                            injection=ChannelStateConfig(trace_turns=2))
    server = create_server(App.open(replace(config, listen="127.0.0.1:0"), embedder=embedder,
                                    settings=settings))
    server.start()
    live = Running(server)
    yield live
    live.close()


def test_ring_keeps_the_configured_turns(short_ring: Running) -> None:
    put(short_ring, DB_FACT)
    for _ in range(4):
        inject(short_ring, DB_QUESTION)
    assert [t.turn for t in trace(short_ring)] == [3, 4]
    assert trace(short_ring, channel="never-used") == []
