"""Capture "all": the assistant replies a history sent to PruneHistory shows are captured too,
each once, through the same gates; blocks and other roles never are."""

from __future__ import annotations

from memsidecar.v1 import injection_pb2 as inj

from tests.capture.conftest import Serve
from tests.capture.test_capture import AGENT, captured, inject, rows
from tests.conftest import Running

ASKED = "Can you suggest a name for my new grey kitten?"
REPLIED = "How about Miso, Ash or Pebble? Grey kittens often suit soft, short names."
LATER = "Tom's wedding is on the 14th of June in Braga, so book the hotel early."


def prune(live: Running, *messages: tuple[int, str]) -> inj.PruneHistoryResponse:
    return live.injection.PruneHistory(inj.PruneHistoryRequest(
        agent_id=AGENT, channel_id="c1",
        messages=[inj.Message(role=role, content=text) for role, text in messages]))


def test_each_reply_is_captured_once(serve: Serve) -> None:
    live = serve(capture="all")
    block = inject(live, ASKED, turn=1).block
    history = [(inj.ROLE_USER, ASKED), (inj.ROLE_ASSISTANT, REPLIED)]
    prune(live, *history)
    prune(live, *history)  # the same history again
    assert sorted(x.content for x in captured(live)) == sorted([ASKED, REPLIED])
    inject(live, "And when is Tom's wedding?", turn=2)
    history += [(inj.ROLE_USER, "And when is Tom's wedding?"), (inj.ROLE_ASSISTANT, LATER)]
    if block:
        history.insert(0, (inj.ROLE_USER, block))
    prune(live, (inj.ROLE_SYSTEM, "You are a helpful assistant."), *history,
          (inj.ROLE_TOOL, "calendar: 2 events"))
    contents = sorted(x.content for x in captured(live))
    assert contents == sorted([ASKED, REPLIED, "And when is Tom's wedding?", LATER])
    replies = [r for r in rows(live) if r[2] == "assistant"]
    assert sorted(int(str(r[1])) for r in replies) == [1, 2]  # the turn each answered


def test_a_reply_with_a_secret_is_not_stored(serve: Serve) -> None:
    live = serve(capture="all")
    inject(live, ASKED, turn=1)
    secret = "Your new API key is sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678, keep it safe."
    for _ in range(2):
        prune(live, (inj.ROLE_USER, ASKED), (inj.ROLE_ASSISTANT, secret))
    assert [x.content for x in captured(live)] == [ASKED]
    assert live.server.app.injector.capture.refused["PII_DETECTED"] == 1  # type: ignore[union-attr]
    assert "sk-proj" not in str(rows(live))


def test_capture_user_leaves_replies_alone(serve: Serve) -> None:
    live = serve(capture="user")
    inject(live, ASKED, turn=1)
    prune(live, (inj.ROLE_USER, ASKED), (inj.ROLE_ASSISTANT, REPLIED))
    assert [x.content for x in captured(live)] == [ASKED]
