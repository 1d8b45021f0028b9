"""sidecar/injection/beside.py: the tasks' results in order, whoever ran them; the caller
never waits for a worker to start; errors reach the caller; a busy machine runs turns in
order."""

from __future__ import annotations

import threading

import pytest

from sidecar.injection.beside import Beside


def test_results_in_order_with_and_without_workers() -> None:
    for workers in (0, 1, 4):
        beside = Beside(workers)
        found, out = beside.run([lambda: 1, lambda: "two", lambda: None], lambda: 3.0)
        assert found == [1, "two", None] and out == 3.0
        beside.close()


def test_tasks_no_worker_started_are_done_by_the_caller() -> None:
    beside = Beside(1)
    release, busy = threading.Event(), threading.Event()

    def hold() -> bool:
        busy.set()
        return release.wait(5)

    other = threading.Thread(target=beside.run, args=([hold], lambda: busy.wait(5)))
    other.start()
    assert busy.wait(5)  # the only worker runs the other turn's task
    ran_on: list[str] = []

    def record() -> int:
        ran_on.append(threading.current_thread().name)
        return 7

    found, _ = beside.run([record], lambda: None)
    assert found == [7] and ran_on == [threading.current_thread().name]
    release.set()
    other.join(5)
    beside.close()


def test_an_error_of_a_task_reaches_the_caller() -> None:
    beside = Beside(2)

    def broken() -> None:
        raise ValueError("no such scope")

    with pytest.raises(ValueError, match="no such scope"):
        beside.run([lambda: 1, broken], lambda: None)
    beside.close()


def test_turns_run_in_order_while_no_core_is_free() -> None:
    load = [0.5]
    beside = Beside(load=lambda: load[0], cores=2)
    assert not beside.busy()
    load[0] = 2.0  # both cores busy on average: the guard fires
    beside._busy = (False, -1e9)  # the reading has aged
    assert beside.busy()
    assert Beside(0).busy()  # no worker: always in order
    assert not Beside(load=lambda: 1.9, cores=2).busy()
    beside.close()
