"""A turn's capture is drained once the Inject's reply is sent, not beside it."""

from __future__ import annotations

import threading

from memsidecar.v1 import injection_pb2 as inj

from sidecar.capture.repo import STORED
from tests.capture.conftest import Serve
from tests.waiting import wait_for


class HeldWake(threading.Event):
    """The drain's wake-up: it waits until the test has the reply, so a wake-up inside the
    call holds the reply back and the call fails at its deadline. (Woken after the reply is
    sent, it may still run before the client has read it: it counts its wake-ups only.)"""

    def __init__(self, replied: threading.Event) -> None:
        super().__init__()
        self.replied = replied
        self.wakes = 0

    def set(self) -> None:
        self.wakes += 1
        self.replied.wait()
        super().set()


def test_the_drain_is_woken_once_the_reply_is_sent(serve: Serve) -> None:
    live = serve(capture="user")
    drain = live.server.app.injector.capture.drain  # type: ignore[union-attr]
    replied = threading.Event()
    drain._wanted = wake = HeldWake(replied)
    try:
        reply = live.injection.Inject(inj.InjectRequest(
            agent_id="ops", channel_id="c1", source="user",
            text="The staging database moved to host db-7 in Frankfurt"), timeout=30)
    finally:
        replied.set()
    assert reply.turn == 1  # the reply came while the wake-up was held
    wait_for(lambda: wake.wakes == 1)
    wait_for(lambda: drain.outcomes[STORED] == 1)  # the turn is written as a memory
