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
from sidecar.retrieval.resident.prefetch import Prefetch
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


def test_cold_names_the_scopes_neither_held_nor_being_loaded() -> None:
    fake = Fake()
    held, loading, cold = ("bo", "u1"), ("ana", "u3"), ("ana", "u4")
    with fake.resident.using([held]):
        pass
    fake.gate = threading.Event()
    errors: list[BaseException] = []
    loader = run(lambda: fake.resident.load(loading), errors)
    assert fake.entered.wait(30)
    assert fake.resident.cold([SHARED, held, loading, cold, cold]) == [cold]
    fake.gate.set()
    loader.join(30)
    assert not errors and fake.resident.cold([held, loading]) == []
    assert fake.evictions == []  # a load alone evicts nothing
    idle = ResidentScopes(fake.load, fake.evict, fake.size, lambda: 0, set)
    assert idle.cold([cold]) == []  # before ``adopt``: every scope counts as held


def test_a_prefetch_and_the_calls_behind_it_load_a_scope_once() -> None:
    fake = Fake()
    key = ("ana", "u1")
    prefetch = Prefetch(fake.resident)
    try:
        fake.gate = threading.Event()
        assert prefetch.start([SHARED, key]) == 1  # the shared scope is held
        assert fake.entered.wait(30)  # the loader thread reads the store, held there
        assert prefetch.start([key]) == 0  # being loaded
        seen: list[list[str]] = []
        errors: list[BaseException] = []

        def call() -> None:
            with fake.resident.using([key]):
                seen.append(list(fake.rows[key]))

        calls = [run(call, errors) for _ in range(3)]
        fake.gate.set()
        for thread in calls:
            thread.join(30)
        assert not errors and fake.loads == [key]
        assert seen == [[f"{key}-stored"]] * 3
        assert prefetch.start([key]) == 0 and fake.loads == [key]
    finally:
        prefetch.close()


def test_a_failed_prefetch_is_loaded_again_and_reported_by_the_call() -> None:
    fake = Fake()
    key = ("bo", "")
    prefetch = Prefetch(fake.resident)
    try:
        fake.fail.add(key)
        assert prefetch.start([key]) == 1
        wait_for(lambda: fake.evictions == [key] and not fake.resident._loading)
        assert not fake.resident.held(key)  # the failed load left nothing
        with pytest.raises(OSError), fake.resident.using([key]):
            pass
        fake.fail.clear()
        with fake.resident.using([key]):
            assert fake.rows[key] == [f"{key}-stored"]
        assert fake.loads == [key, key, key]
    finally:
        prefetch.close()


def test_a_prefetch_never_puts_rows_during_an_eviction() -> None:
    """A prefetched load puts its rows under the read side: an eviction running holds it
    back, and it holds back an eviction waiting for it only until its rows are in."""
    fake = Fake()
    old, key = ("bo", "u1"), ("ana", "u2")
    with fake.resident.using([old]):
        pass
    evicting, resume = threading.Event(), threading.Event()
    evict = fake.evict

    def slow_evict(k: ScopeKey) -> None:
        evicting.set()
        assert resume.wait(30)
        evict(k)

    fake.resident._evict = slow_evict
    errors: list[BaseException] = []
    evictor = run(lambda: fake.resident.evict_over_budget(0), errors)
    assert evicting.wait(30)  # the eviction runs, under the write side
    prefetch = Prefetch(fake.resident)
    try:
        assert prefetch.start([key]) == 1
        wait_for(lambda: fake.loads == [old, key])  # read; its put waits for the eviction
        assert key not in fake.rows and not fake.resident.held(key)
        resume.set()
        evictor.join(30)
        wait_for(lambda: fake.resident.held(key))
        assert not errors and fake.rows[key] == [f"{key}-stored"] and old not in fake.rows
    finally:
        prefetch.close()


def test_a_bound_under_the_budget_skips_the_walk_and_one_over_it_evicts_as_without(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``bound`` (at least the held bytes) only spares the walk over the held scopes when it
    is within the budget; over it, the held scopes' own sizes decide, as without one."""
    fake = Fake(budget=250)
    bound = [0]
    fake.resident = ResidentScopes(fake.load, fake.evict, fake.size, lambda: fake.budget,
                                   lambda: fake.pinned, lambda: bound[0])
    fake.resident.adopt([SHARED])
    walks: list[int] = []
    walk = fake.resident.resident_bytes
    monkeypatch.setattr(fake.resident, "resident_bytes", lambda: walks.append(1) or walk())
    for key in [("ana", ""), ("bo", "u1")]:
        with fake.resident.using([key]):
            pass
        bound[0] += 100
    assert not walks and not fake.evictions  # within the budget: no walk
    bound[0] = 10_000  # over it (e.g. a scope being loaded counts): the held sizes decide
    with fake.resident.using([("bo", "u2")]):
        pass
    assert walks and fake.evictions == [("ana", "")]
