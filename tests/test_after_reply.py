"""Work deferred to after a call's reply: at once outside a call, once per call inside."""

from __future__ import annotations

import pytest

from sidecar import after_reply


def test_outside_a_call_the_work_runs_at_once() -> None:
    done: list[str] = []
    after_reply.later(lambda: done.append("now"))
    assert done == ["now"]


def test_inside_a_call_the_work_waits_for_run_and_runs_once() -> None:
    done: list[str] = []

    def wake() -> None:
        done.append("wake")

    token, jobs = after_reply.bind()
    try:
        after_reply.later(wake)
        after_reply.later(wake)
        after_reply.later(lambda: done.append("other"))
        assert done == []
    finally:
        after_reply.unbind(token)
    after_reply.later(lambda: done.append("outside"))  # unbound again: at once
    assert done == ["outside"]
    after_reply.run(jobs)
    assert done == ["outside", "wake", "other"]


def test_a_failing_job_leaves_the_others_run(caplog: pytest.LogCaptureFixture) -> None:
    done: list[str] = []

    def fail() -> None:
        raise RuntimeError("boom")

    after_reply.run([fail, lambda: done.append("after")])
    assert done == ["after"]
    assert "work after a reply failed" in caplog.text
