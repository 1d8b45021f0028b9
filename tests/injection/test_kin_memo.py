"""The focus's search for its anchors, remembered (``conversation.kin.KinMemo``), finds what
a fresh search finds (``focus.kin_search``): again and again while nothing changed, after a
write, a forget and an erasure in the viewer's scopes, after an edge, and for another
viewer; it searches again only after such a change, and keeps at most its bound."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from sidecar.app import App
from sidecar.conversation.focus import kin_search
from sidecar.conversation.kin import KinMemo
from sidecar.records import Edge, Memory, MemoryDraft, MemoryType, Relation, Viewer
from sidecar.retrieval import pooled
from sidecar.retrieval.contract import SearchQuery, SearchResult
from sidecar.retrieval.fusion import pool

AGENT = "baker"
NOTES = [
    "Maria's sourdough starter is fed with rye flour every morning.",
    "The bakery's oven runs at 250 degrees for the country loaves.",
    "Maria shapes the baguettes by hand before the shop opens.",
    "The rye starter lives in a jar on the top shelf.",
    "Country loaves proof overnight in the walk-in fridge.",
    "The delivery van leaves at seven with the morning bread.",
    "Payroll runs on the last Friday of each month.",
    "The accountant files the quarterly VAT return.",
]
ALICE = Viewer(AGENT, "alice", "c-alice")
BOB = Viewer(AGENT, "bob", "c-bob")


class Counted:
    """The app's retriever, counting its searches."""

    def __init__(self, app: App) -> None:
        self.inner = app.retriever
        self.searches = 0

    def search(self, query: SearchQuery) -> SearchResult:
        self.searches += 1
        return self.inner.search(query)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def put(app: App, text: str, user_id: str = "") -> Memory:
    return app.memories.upsert(MemoryDraft(text, MemoryType.FACT, agent_id=AGENT,
                                           user_id=user_id)).memory


def anchors_of(app: App, memories: Sequence[Memory]) -> tuple[list[Memory], np.ndarray]:
    found = [app.retriever.embedding_of(m.id) for m in memories]
    rows = np.vstack([r for r in found if r is not None])
    return list(memories), rows


def ids(found: Sequence[Memory]) -> list[tuple[str, int]]:
    return [(m.id, m.version) for m in found]


def test_the_remembered_search_is_the_fresh_one_through_changes(
        app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fusion's recency boost reads the clock: frozen, so a fresh search repeats.
    monkeypatch.setattr(pooled, "now_us", lambda: 1_790_000_000_000_000)
    monkeypatch.setattr(pool, "now_us", lambda: 1_790_000_000_000_000)
    shared = [put(app, t) for t in NOTES]
    alices = put(app, "Alice orders two rye loaves from Maria every Saturday.", "alice")
    put(app, "Bob wants his baguettes sliced.", "bob")
    retriever = Counted(app)
    memo = KinMemo()
    anchors, rows = anchors_of(app, shared[:2])

    def same(viewer: Viewer) -> list[Memory]:
        found = memo.search(anchors, rows, retriever, viewer)  # type: ignore[arg-type]
        assert ids(found) == ids(kin_search(anchors, rows, app.retriever, viewer))
        return found

    first = same(ALICE)
    assert alices.id in {m.id for m in first}
    searched = retriever.searches
    assert ids(same(ALICE)) == ids(first) and retriever.searches == searched  # remembered

    bobs = same(BOB)  # another viewer: searched for itself, never given Alice's
    assert retriever.searches == searched + 1
    assert alices.id not in {m.id for m in bobs}

    steps: list[Callable[[], object]] = [
        lambda: put(app, "Maria feeds a second rye starter for the bakery's oven.", "alice"),
        lambda: app.memories.forget(first[0].id, agent_id=AGENT),
        lambda: app.memories.upsert(MemoryDraft(
            "The bakery's oven now runs at 240 degrees.", MemoryType.FACT, id=shared[1].id,
            agent_id=AGENT)),
        lambda: app.retriever.edges_changed(  # type: ignore[attr-defined]
            [Edge(shared[0].id, shared[6].id, Relation.RELATED_TO)], ()),
        lambda: app.eraser.forget_user(AGENT, "alice"),
    ]
    for change in steps:
        before = retriever.searches
        change()
        anchors, rows = anchors_of(app, [m for m in app.retriever.live_memories(
            [shared[0].id, shared[1].id], ALICE) if m is not None])
        after = same(ALICE)
        assert retriever.searches == before + 1  # the change made it search again
        assert ids(same(ALICE)) == ids(after) and retriever.searches == before + 1
        assert ids(same(BOB)) == ids(kin_search(anchors, rows, app.retriever, BOB))
    assert alices.id not in {m.id for m in same(ALICE)}  # erased


def test_a_search_under_a_change_is_not_kept_and_the_memo_is_bounded(app: App) -> None:
    shared = [put(app, t) for t in NOTES]
    retriever = Counted(app)
    anchors, rows = anchors_of(app, shared[:2])
    memo = KinMemo(kept=2)
    changes = app.retriever._changes  # type: ignore[attr-defined]
    with changes.changing():  # a write under way: nothing is kept
        memo.search(anchors, rows, retriever, ALICE)  # type: ignore[arg-type]
    assert len(memo) == 0
    for viewer in (ALICE, BOB, Viewer(AGENT, "carol", "c-carol")):
        memo.search(anchors, rows, retriever, viewer)  # type: ignore[arg-type]
    assert len(memo) == 2
