"""ResidentScopes on its own: concurrent first calls load a scope once, writes during a load
are applied after it in order, a failed load is tried again by the next call, eviction waits
for every reader and keeps the pinned scopes, least recently used first. Each interleaving is
held at its exact point with events (no sleeps)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from sidecar.retrieval.resident.keys import SHARED, ScopeKey
from sidecar.retrieval.resident.lru import ResidentScopes, Route
from tests.waiting import wait_for


class Fake:
    """Loads and evictions recorded; a scope's bytes are its rows."""

    def __init__(self, budget: int = 1_000) -> None:
        self.rows: dict[ScopeKey, list[str]] = {}
        self.loads: list[ScopeKey] = []
        self.evictions: list[ScopeKey] = []
        self.budget = budget
        self.gate: threading.Event | None = None  # holds every load until set
        self.entered = threading.Event()
        self.fail: set[ScopeKey] = set()
        self.pinned: set[ScopeKey] = set()
        self.resident = ResidentScopes(self.load, self.evict, self.size, lambda: self.budget,
                                       lambda: self.pinned)
        self.resident.adopt([SHARED])

    def load(self, key: ScopeKey) -> Callable[[], None]:
        """The read (held at ``gate``); what it returns puts the rows."""
        self.loads.append(key)
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(30)
        if key in self.fail:
            raise OSError("store away")
        return lambda: self.rows.__setitem__(key, [f"{key}-stored"])

    def evict(self, key: ScopeKey) -> None:
        self.evictions.append(key)
        self.rows.pop(key, None)

    def size(self, key: ScopeKey) -> int:
        return 100 * len(self.rows.get(key, ()))


def run(target: Callable[[], None], errors: list[BaseException]) -> threading.Thread:
    def body() -> None:
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
    thread = threading.Thread(target=body)
    thread.start()
    return thread


def test_concurrent_first_calls_load_once_and_all_see_the_rows() -> None:
    fake = Fake()
    fake.gate = threading.Event()
    seen: list[list[str]] = []
    errors: list[BaseException] = []

    def call() -> None:
        with fake.resident.using([("ana", "u1")]):
            seen.append(list(fake.rows[("ana", "u1")]))

    threads = [run(call, errors) for _ in range(6)]
    assert fake.entered.wait(30)
    fake.gate.set()
    for thread in threads:
        thread.join(30)
    assert not errors and fake.loads == [("ana", "u1")]
    assert seen == [["('ana', 'u1')-stored"]] * 6


def test_writes_during_a_load_apply_after_its_rows_in_order_and_cold_writes_wait() -> None:
    fake = Fake()
    key = ("ana", "u1")
    assert fake.resident.route(key, lambda: None) is Route.COLD
    fake.gate = threading.Event()
    errors: list[BaseException] = []
    def first_call() -> None:
        with fake.resident.using([key], evict=False):
            pass

    loader = run(first_call, errors)
    assert fake.entered.wait(30)
    for n in (1, 2):
        assert fake.resident.route(key, lambda n=n: fake.rows[key].append(f"write {n}")) \
            is Route.DEFERRED
    assert not fake.resident.held(key)
    fake.gate.set()
    loader.join(30)
    assert not errors and fake.rows[key] == [f"{key}-stored", "write 1", "write 2"]
    assert fake.resident.held(key) and fake.resident.route(key, lambda: None) is Route.APPLY


def test_a_failed_load_leaves_nothing_and_the_next_call_loads_again() -> None:
    fake = Fake()
    key = ("bo", "")
    fake.fail.add(key)
    with pytest.raises(OSError), fake.resident.using([key]):
        pass
    assert not fake.resident.held(key) and fake.evictions == [key]
    fake.fail.clear()
    with fake.resident.using([key]):
        assert fake.rows[key] == [f"{key}-stored"]
    assert fake.loads == [key, key]


def test_eviction_waits_for_readers_keeps_pinned_and_goes_least_recently_used_first() -> None:
    fake = Fake(budget=250)  # two scopes of 100 besides the shared one
    fake.pinned = {("ana", "")}
    for key in [("ana", ""), ("bo", "u1"), ("bo", "u2")]:
        with fake.resident.using([key]):
            pass
    assert fake.evictions == [("bo", "u1")]  # ana is pinned: bo/u1 was the oldest other
    with fake.resident.using([("bo", "u1")]):  # loaded again, now the most recent
        pass
    assert fake.evictions == [("bo", "u1"), ("bo", "u2")]
    # A reader holds bo/u1: an eviction waits until it is done.
    fake.budget = 0
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        with fake.resident.using([("bo", "u1")], evict=False):
            inside.set()
            assert release.wait(30)
            assert fake.rows[("bo", "u1")]  # never evicted under a reader

    holder = run(reader, errors)
    assert inside.wait(30)
    evictor = run(fake.resident.evict_over_budget, errors)
    evictor.join(0.2)
    assert evictor.is_alive() and fake.evictions[-1] == ("bo", "u2")
    release.set()
    holder.join(30)
    evictor.join(30)
    assert not errors and fake.evictions[-1] == ("bo", "u1")
    assert fake.resident.held(("ana", "")) and fake.resident.held(SHARED)


def test_a_load_reading_the_store_holds_back_no_eviction_and_no_call_of_a_held_scope() -> None:
    fake = Fake()
    older, newer, cold = ("bo", "u1"), ("bo", "u2"), ("ana", "u3")
    for key in (older, newer):
        with fake.resident.using([key]):
            pass
    fake.gate, fake.entered = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    def first_call() -> None:
        with fake.resident.using([cold], evict=False):
            pass

    loader = run(first_call, errors)
    assert fake.entered.wait(30)  # the load is reading the store, held there
    evictor = run(lambda: fake.resident.evict_over_budget(100), errors)
    evictor.join(30)
    assert not evictor.is_alive() and fake.evictions == [older]
    seen: list[list[str]] = []

    def warm_call() -> None:
        with fake.resident.using([newer]):
            seen.append(list(fake.rows[newer]))

    caller = run(warm_call, errors)
    caller.join(30)
    assert not caller.is_alive() and seen == [[f"{newer}-stored"]]
    assert not fake.resident.held(cold)
    fake.gate.set()
    loader.join(30)
    assert not errors and fake.resident.held(cold) and fake.rows[cold] == [f"{cold}-stored"]


def test_a_load_puts_its_rows_past_an_eviction_that_waits_for_a_call_waiting_for_the_load(
) -> None:
    fake = Fake()
    held, cold = ("bo", "u1"), ("ana", "u3")
    with fake.resident.using([held]):
        pass
    fake.gate, fake.entered = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first_call() -> None:
        with fake.resident.using([cold], evict=False):
            pass

    loader = run(first_call, errors)
    assert fake.entered.wait(30)  # the load reads the store
    inside, seen = threading.Event(), []

    def call_holding_the_read_side() -> None:
        with fake.resident.using([held], evict=False):
            inside.set()
            with fake.resident.using([cold], evict=False):  # waits for the load
                seen.append(list(fake.rows[cold]))

    caller = run(call_holding_the_read_side, errors)
    assert inside.wait(30)
    evictor = run(lambda: fake.resident.evict_over_budget(0), errors)
    # the eviction waits for the caller (it holds the read side)
    wait_for(lambda: bool(fake.resident._rw._writers_waiting) or not evictor.is_alive())
    assert evictor.is_alive()
    fake.gate.set()  # the load puts its rows ahead of the waiting eviction
    for thread in (loader, caller, evictor):
        thread.join(30)
        assert not thread.is_alive()
    assert not errors and seen == [[f"{cold}-stored"]]
