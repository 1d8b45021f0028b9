"""CatchUp: tries again until written, sleeps when nothing is left, wakes again, survives a
failing attempt, stops on close."""

from __future__ import annotations

import threading

import pytest

from sidecar.store.catch_up import CatchUp
from tests.waiting import wait_for


class Store:
    """What waits for a store that answers only once ``back`` is set."""

    def __init__(self, fail_first: int = 0) -> None:
        self.back = threading.Event()
        self.waiting = 0
        self.written = 0
        self.attempts = 0
        self.fail_first = fail_first
        self.lock = threading.Lock()

    def attempt(self) -> bool:
        with self.lock:
            self.attempts += 1
            if self.attempts <= self.fail_first:
                raise RuntimeError("a bug in a write")
            if self.back.is_set():
                self.written += self.waiting
                self.waiting = 0
            return self.waiting == 0


def test_written_once_the_store_is_back_with_no_other_call() -> None:
    store = Store()
    catch_up = CatchUp(store.attempt, "test-catch-up", every_s=0.01)
    store.waiting = 3
    catch_up.wake()
    wait_for(lambda: store.attempts >= 3)  # tried again and again while away
    assert store.written == 0
    store.back.set()
    wait_for(lambda: store.written == 3)
    catch_up.close()


def test_it_sleeps_when_caught_up_and_wakes_for_more() -> None:
    store = Store()
    store.back.set()
    catch_up = CatchUp(store.attempt, "test-catch-up", every_s=0.01)
    store.waiting = 1
    catch_up.wake()
    wait_for(lambda: store.written == 1)
    catch_up.close()  # a thread that would go on trying would not stop between attempts
    tried = store.attempts
    assert tried == 1
    catch_up.wake()  # after close: nothing runs
    assert store.attempts == tried


def test_a_failing_attempt_is_logged_and_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    store = Store(fail_first=2)
    store.back.set()
    catch_up = CatchUp(store.attempt, "test-catch-up", every_s=0.01)
    store.waiting = 2
    catch_up.wake()
    wait_for(lambda: store.written == 2)
    catch_up.close()
    assert caplog.text.count("a catch-up of writes waiting for the store failed") == 2


def test_close_without_wake_starts_nothing() -> None:
    catch_up = CatchUp(lambda: True, "test-catch-up")
    catch_up.close()
    assert not [t for t in threading.enumerate() if t.name == "test-catch-up"]
