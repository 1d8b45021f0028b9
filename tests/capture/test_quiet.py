"""The reads of a channel's held captures skipped while it is known to hold nothing
(``sidecar.capture.quiet``) answer as the reads do, through writes, settles, releases,
erasures and restarts; on a shared store (PostgreSQL) every read is done."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import numpy as np

from sidecar.capture.quiet import QuietChannels
from sidecar.capture.repo import DEDUPLICATED, STORED, CaptureRepo, Pending
from sidecar.store.contract import SqlStore
from sidecar.store.db import Database

CHANNELS = ("c0", "c1", "c2")


def reference(db: SqlStore) -> CaptureRepo:
    """The same reads, every one done."""
    repo = CaptureRepo(db)
    repo.quiet = None
    return repo


def answers(repo: CaptureRepo, channel: str) -> tuple[object, ...]:
    ids = [f"m-{channel}-{n}" for n in range(4)]
    held = sorted((h.key, h.turn, h.content) for h in repo.held(channel))
    since = repo.held_since(channel, 2)
    among = repo.held_among(channel, 0, ids)
    return held, (sorted(since[0]), sorted(since[1])), (sorted(among[0]), sorted(among[1]))


def random_step(repo: CaptureRepo, rng: random.Random, rows: list[Pending], n: int) -> None:
    channel = rng.choice(CHANNELS)
    step = rng.randrange(7)
    if step <= 1:  # a capture written (held), or one refused at the gates (not held)
        row = Pending(channel, f"k{n}", "agent", "user", rng.randrange(5), f"turn {n}", "",
                      n, f"m-{channel}-{rng.randrange(4)}",
                      np.zeros(4, np.float32) if rng.random() < 0.5 else None)
        with repo.db.transaction():
            if step == 0:
                repo.put(row)
                rows.append(row)
            else:
                repo.add_refused(row)
    elif step == 2 and rows:  # the drain stored, deduplicated or refused a pending one
        row = rng.choice(rows)
        outcome = rng.choice((STORED, DEDUPLICATED, "GATE_REFUSED"))
        if outcome == DEDUPLICATED:
            repo.mark(row, DEDUPLICATED, f"m-{row.channel_id}-0")
        elif outcome == STORED:
            repo.settle_now(row, STORED)
        else:
            repo.settle_now(row, outcome)
    elif step == 3:  # a history that no longer shows some of them
        keys = [h.key for h in repo.held(channel) if rng.random() < 0.5]
        with repo.db.transaction():
            repo.release(channel, keys)
    elif step == 4:
        with repo.db.transaction():
            repo.release_all(channel)
    elif step == 5 and rows:  # an erasure
        gone = rng.choice(rows)
        repo.db.execute("DELETE FROM captures WHERE channel_id = ? AND key = ?",
                        (gone.channel_id, gone.key))
    else:
        repo.held(channel)  # a PruneHistory's read: may find the channel quiet


def test_answers_as_the_reads_through_random_changes(store_db: SqlStore) -> None:
    repo, exact = CaptureRepo(store_db), reference(store_db)
    assert (repo.quiet is None) == (store_db.dialect == "postgres")
    rng, rows = random.Random(7), []
    skipped = 0
    for n in range(400):
        random_step(repo, rng, rows, n)
        for channel in CHANNELS:
            skipped += repo.quiet is not None and channel in repo.quiet
            assert answers(repo, channel) == answers(exact, channel)
    if repo.quiet is not None:
        assert skipped > 100  # the fast path was taken, not only the reads


def test_a_restart_reads_again(tmp_path: Path) -> None:
    db = Database(tmp_path / "store.sqlite3")
    repo = CaptureRepo(db)
    assert repo.held("c0") == []
    assert repo.quiet is not None and "c0" in repo.quiet
    db.execute("INSERT INTO captures (channel_id, key, agent_id, role, turn, content, context, "
               "at_us, memory_id, user_id) VALUES ('c0','k','a','user',1,'said','',1,'m','')")
    # A process that did not write it (a restart) reads it: nothing is known quiet there.
    assert [h.key for h in CaptureRepo(db).held("c0")] == ["k"]
    assert CaptureRepo(db).held_since("c0", 0) == ({"m"}, ["said"])
    db.close()


def test_a_read_begun_before_a_write_does_not_declare_the_channel_quiet() -> None:
    quiet = QuietChannels()
    began = quiet.begin()
    quiet.written("c1")  # any channel's insert between the read's start and its end
    quiet.found_none("c0", began)
    assert "c0" not in quiet
    quiet.found_none("c0", quiet.begin())
    assert "c0" in quiet
    quiet.written("c0")
    assert "c0" not in quiet


def test_remembers_at_most_its_limit() -> None:
    quiet = QuietChannels(limit=2)
    for channel in ("a", "b", "c"):
        quiet.found_none(channel, quiet.begin())
    assert "a" not in quiet and "b" in quiet and "c" in quiet


def test_another_sidecar_on_a_shared_store_is_seen(pg_dsn: str) -> None:
    from sidecar.store.postgres.db import PgDatabase

    one, other = PgDatabase(pg_dsn), PgDatabase(pg_dsn)
    try:
        mine, theirs = CaptureRepo(one), CaptureRepo(other)
        assert mine.held("c0") == []
        with other.transaction():
            theirs.put(Pending("c0", "k", "a", "user", 1, "said", "", 1, "m", None))
        assert [h.key for h in mine.held("c0")] == ["k"]
        assert mine.held_since("c0", 0) == ({"m"}, ["said"])
    finally:
        one.close()
        other.close()


def test_the_held_read_does_not_wait_for_a_capture_being_written(tmp_path: Path) -> None:
    db = Database(tmp_path / "store.sqlite3")
    repo = CaptureRepo(db)
    with db.transaction():
        repo.put(Pending("c0", "k", "a", "user", 1, "said", "", 1, "m", None))
    writing, done = threading.Event(), threading.Event()

    def drain() -> None:  # a capture being written: its transaction open
        with db.transaction():
            repo.put(Pending("c0", "k2", "a", "user", 2, "more", "", 2, "m2", None))
            writing.set()
            done.wait(10)

    writer = threading.Thread(target=drain)
    writer.start()
    assert writing.wait(10)
    found: list[list[str]] = []
    reader = threading.Thread(target=lambda: found.append([h.key for h in repo.held("c0")]))
    reader.start()
    reader.join(5)
    finished = not reader.is_alive()
    done.set()
    writer.join(10)
    reader.join(10)
    assert finished  # it read what was committed, without waiting for the transaction
    assert found == [["k"]]
    assert sorted(h.key for h in repo.held("c0")) == ["k", "k2"]
    db.close()
