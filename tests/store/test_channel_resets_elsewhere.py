"""Sidecars sharing one PostgreSQL: a channel reset or erased on one leaves the others' memory.

Each test drives the follower's read itself (``feed.catch_up``): once it returns, every
change committed before it was handed on, whatever the feed's own thread did meanwhile.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

from sidecar.app import App
from sidecar.injection.elsewhere import channel_digest
from sidecar.injection.types import InjectRequest
from sidecar.records import MemoryDraft, MemoryType
from tests.waiting import wait_for

SECRET = "my gym locker code is Zanzibar-Thimble"


def holds(app: App, channel_id: str) -> bool:
    """Whether ``app`` holds anything of the channel in memory (its state copy or a read of
    it, its trace, capture's last message)."""
    injector = app.injector
    return (channel_id in injector.states.names() or bool(injector.trace.last(channel_id))
            or (injector.capture is not None and channel_id in injector.capture.names()))


def recent_texts(app: App, channel_id: str) -> list[str]:
    with app.injector.states.locked(channel_id) as state:
        return [r.text for r in state.recent]


def talk(app: App, channel_id: str, *texts: str, user_id: str = "") -> int:
    turn = 0
    for text in texts:
        turn = app.injector.inject(InjectRequest("ops", channel_id, text,
                                                 user_id=user_id)).turn
    return turn


def test_a_reset_on_one_sidecar_drops_the_others_copy(pair: tuple[App, App]) -> None:
    a, b = pair
    assert a.feed is not None and b.feed is not None
    b.owners.claim("c-ü", "ops")
    assert talk(b, "c-ü", SECRET, "and where is the gym?") == 2
    assert holds(b, "c-ü") and SECRET in recent_texts(b, "c-ü")
    assert talk(b, "other", "what is on the menu today?") == 1
    assert a.injector.reset("c-ü")
    b.feed.catch_up()
    assert not holds(b, "c-ü")
    assert holds(b, "other")  # only the reset channel goes
    assert talk(b, "c-ü", "which restaurant is near the office?") == 1  # a new conversation
    assert recent_texts(b, "c-ü") == ["which restaurant is near the office?"]


def test_the_change_names_the_channel_by_digest_only(pair: tuple[App, App],
                                                    pg_dsn: str) -> None:
    a, b = pair
    channel = "c-ü \u4e16 with spaces"
    talk(b, channel, SECRET)
    assert a.injector.reset(channel)
    assert not a.injector.reset(channel)  # no state left: no second change
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT memory_id, source_id, target_id, relation, channel "
                            "FROM changes WHERE channel IS NOT NULL").fetchall()
        dump = conn.execute("SELECT string_agg(changes::text, '|') FROM changes").fetchone()
    assert rows == [(None, None, None, None, channel_digest(channel))]
    assert dump is not None and channel not in str(dump[0]) and "Zanzibar" not in str(dump[0])


def test_a_user_erased_on_one_sidecar_leaves_nothing_in_the_others_memory(
        pair: tuple[App, App]) -> None:
    a, b = pair
    assert b.feed is not None
    b.memories.import_stream([MemoryDraft(f"Alice says: {SECRET}", MemoryType.FACT,
                                          agent_id="ops", user_id="alice")])
    wait_for(lambda: len(b.retriever.live) == 1)
    b.owners.claim("dm", "ops")  # as the Inject servicer does
    talk(b, "dm", "what is my locker code?", SECRET, user_id="alice")
    assert holds(b, "dm")
    assert a.eraser.forget_user("ops", "alice").channels == 1
    b.feed.catch_up()
    assert not holds(b, "dm")
    assert len(b.retriever.live) == 0
    assert talk(b, "dm", "which restaurant is near the office?", user_id="bob") == 1
    assert recent_texts(b, "dm") == ["which restaurant is near the office?"]


def test_an_inject_holding_the_channel_when_it_is_reset_elsewhere_is_built_again(
        pair: tuple[App, App]) -> None:
    """The copy is dropped while an Inject on it holds its lock: the Inject finishes, its
    commit on the erased turn is refused by the store, and it is built again on the new
    conversation; the old turns are written nowhere and kept nowhere."""
    a, b = pair
    assert b.feed is not None
    talk(b, "c", SECRET, "and where is the gym?")
    states = b.injector.states
    commit = states.commit
    got, go = threading.Event(), threading.Event()

    def held_commit(*args: Any, **kwargs: Any) -> None:  # inside the channel's lock
        if not got.is_set():
            got.set()
            assert go.wait(30)
        commit(*args, **kwargs)

    states.commit = held_commit  # type: ignore[method-assign]
    turns: list[int] = []
    call = threading.Thread(target=lambda: turns.append(talk(b, "c", "a third question")),
                            daemon=True)
    call.start()
    assert got.wait(30)
    assert a.injector.reset("c")
    b.feed.catch_up()  # drops the copy while the Inject holds its lock
    assert "c" not in states.names()
    go.set()
    call.join(30)
    assert turns == [1]
    assert recent_texts(b, "c") == ["a third question"]
    assert recent_texts(a, "c") == ["a third question"]  # the store's rows


def test_a_feed_gap_drops_every_copy(pair: tuple[App, App]) -> None:
    """Changes deleted by retention before this sidecar read them may have named any
    channel: every copy goes."""
    a, b = pair
    assert a.feed is not None and b.feed is not None
    talk(b, "c", SECRET)
    talk(b, "d", "what is on the menu today?")
    b.feed.close()  # b stops listening
    assert a.injector.reset("c")
    a.feed.retention_s = 0
    a.feed.prune()
    b.feed.catch_up()
    assert b.feed.reloads == 1
    assert not holds(b, "c") and "d" not in b.injector.states.names()


def test_a_memory_erased_on_one_sidecar_leaves_no_copy_quoting_it_on_the_others(
        pair: tuple[App, App]) -> None:
    """A hard ForgetMemory blanks the saved replies that quoted the memory (the channel is
    not reset): the other sidecar's copies quoting it go too, so a retry there never
    answers with it."""
    a, b = pair
    assert b.feed is not None
    memory = b.memories.upsert(MemoryDraft(f"Alice says: {SECRET}", MemoryType.FACT,
                                           agent_id="ops")).memory
    wait_for(lambda: len(a.retriever.live) == 1)
    first = b.injector.inject(InjectRequest("ops", "c", "what is the gym locker code?"))
    assert "Zanzibar" in first.block
    talk(b, "quiet", "what is on the menu today?")
    a.eraser.erase_memory(memory.id, "ops")
    b.feed.catch_up()
    assert "c" not in b.injector.states.names()
    assert "quiet" in b.injector.states.names()  # it never named the memory
    again = b.injector.inject(InjectRequest("ops", "c", "what is the gym locker code?",
                                            turn=1))  # a retry of the turn
    assert again.turn == 1 and "Zanzibar" not in again.block
