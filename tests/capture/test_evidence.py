"""Captured turns are evidence of what was said, not answers: a question captured yesterday
does not take the place of the fact that answers it today; a content-free turn is not
captured (real server, model and SQLite file)."""

from __future__ import annotations

from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from tests.capture.conftest import Serve
from tests.capture.test_capture import AGENT, captured, inject

FACT = "The payroll service is owned by the finance platform team in Lisbon."
QUESTIONS = ["Who owns the payroll service?", "Remind me where the payroll service is hosted?",
             "Which team owns payroll again?"]


def test_a_captured_question_does_not_displace_the_fact(serve: Serve) -> None:
    live = serve(capture="user", max_total=1)
    fact = live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=FACT, type=m.MEMORY_TYPE_FACT, agent_id=AGENT))).memory.id
    for n, question in enumerate(QUESTIONS):
        inject(live, question, channel=f"yesterday-{n}")
    assert len(captured(live)) == len(QUESTIONS)
    today = inject(live, QUESTIONS[0], channel="today")
    assert [i.id for i in today.items] == [fact]
    turns = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(
        channel_id="today", agent_id=AGENT)).turns
    assert [i.id for i in turns[-1].injected] == [fact]
    assert [d.id for d in turns[-1].dropped if d.id == fact] == []  # once: injected


def test_a_content_free_turn_is_not_captured(serve: Serve) -> None:
    live = serve(capture="user")
    inject(live, "The staging database moved to host db-7 last Tuesday")
    for text in ("ok thanks", "lol", "cool", "I see."):
        assert inject(live, text).skip_reason == "content_free"
    assert [x.content for x in captured(live)] == [
        "The staging database moved to host db-7 last Tuesday"]
