"""Two people in one channel: a turn's context is its own speaker's recent turns (and the
replies to them) when the request names the speaker; every recent turn when it does not
(real server, model and SQLite file)."""

from __future__ import annotations

from memsidecar.v1 import injection_pb2 as inj

from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.test_focus import stored


def say(live: Running, text: str, speaker: str) -> inj.InjectResponse:
    return live.injection.Inject(inj.InjectRequest(
        agent_id="", channel_id="c", text=text, source="user", user_id=speaker))


def context_of(live: Running) -> list[int]:
    turns = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="c")).turns
    return [c.turn for c in turns[-1].context]


def test_two_speakers_on_one_channel_keep_their_threads(serve: Serve) -> None:
    live = serve()
    names = stored(live)
    say(live, "Who opened the bakery on Elm Street?", "ann")  # 1
    say(live, "Who runs the bakery on Harbour Road?", "bob")  # 2
    ann = say(live, "When does she bake?", "ann")  # 3
    assert context_of(live) == [1]
    assert "M1" in {names[i.id] for i in ann.items}  # Maria's, not Jonas's notes
    say(live, "How did he pay for the repair?", "bob")  # 4
    assert context_of(live) == [2]
    live.close()
    live = serve()  # the speakers are kept with the turns
    say(live, "And what does she sell?", "ann")  # 5
    assert context_of(live) == [1, 3]
    say(live, "and?", "")  # not known: every speaker's recent turns
    assert context_of(live) == [3, 4, 5]
