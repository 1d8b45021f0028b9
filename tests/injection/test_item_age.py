"""Each block line says how old its memory is at the turn: exact wording per age, and a real
Inject of memories restored with their own (old) created_at."""

from __future__ import annotations

import re

import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.injection.age import DAY_US, HOUR_US, age_note
from sidecar.timing import now_us
from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.helpers import body, inject

NOW = 1_780_000_000_000_000  # 2026-05-28 20:26:40 UTC
MINUTE_US = HOUR_US // 60


@pytest.mark.parametrize("age_us,note", [
    (0, "(written just now)"),
    (59 * MINUTE_US, "(written just now)"),
    (HOUR_US, "(written an hour ago)"),
    (23 * HOUR_US + 59 * MINUTE_US, "(written 23 hours ago)"),
    (DAY_US, "(written yesterday)"),
    (2 * DAY_US, "(written 2 days ago)"),
    (13 * DAY_US, "(written 13 days ago)"),
    (14 * DAY_US, "(written 2 weeks ago)"),
    (59 * DAY_US, "(written 8 weeks ago)"),
    (60 * DAY_US, "(written 2 months ago)"),
    (364 * DAY_US, "(written 12 months ago)"),
    (365 * DAY_US, "(written a year ago)"),
    (800 * DAY_US, "(written 2 years ago)"),
    (-5 * DAY_US, "(written just now)"),  # another host's clock ahead of ours
])
def test_relative_wording(age_us: int, note: str) -> None:
    assert age_note(NOW - age_us, NOW, date_after_days=10_000) == note


def test_the_date_from_the_configured_age() -> None:
    assert age_note(NOW - 89 * DAY_US, NOW, 90) == "(written 2 months ago)"
    assert age_note(NOW - 90 * DAY_US, NOW, 90) == "(written 27 Feb 2026)"


def restore(live: Running, memory_id: str, content: str, days_ago: float) -> None:
    memory = m.Memory(id=memory_id, content=content, type=m.MEMORY_TYPE_FACT, version=1)
    written = now_us() - int(days_ago * DAY_US)
    memory.created_at.FromMicroseconds(written)
    memory.updated_at.FromMicroseconds(written)
    request = s.ImportBatch(sequence=1, items=[s.ImportItem(memory=memory, restore=True)])
    (ack,) = live.store.ImportMemoriesStream(iter([request]))
    assert ack.committed == 1


def test_a_restored_memory_is_as_old_as_its_created_at(serve: Serve) -> None:
    live = serve(item_age_date_days=100)
    restore(live, "recent", "The billing service runs on PostgreSQL 16.", 22.5)
    reply = inject(live, "Which database does the billing service use?", channel="a")
    assert body(reply).endswith("[Fact] The billing service runs on PostgreSQL 16. "
                                "(written 3 weeks ago)")
    restore(live, "old", "The office cat is called Miso.", 200.5)
    reply = inject(live, "What is the office cat called?", channel="b")
    assert re.search(r"\n\[Fact\] The office cat is called Miso\. \(written \d{1,2} "
                     r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}\)$", body(reply))


def test_off_leaves_the_lines_as_they_were(serve: Serve) -> None:
    live = serve(item_age=False)
    restore(live, "recent", "The billing service runs on PostgreSQL 16.", 22.5)
    reply = inject(live, "Which database does the billing service use?")
    assert body(reply).endswith("\n[Fact] The billing service runs on PostgreSQL 16.")
