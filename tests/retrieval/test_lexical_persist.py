"""Saved BM25 postings: restoring them gives the scores of a fresh build; damage rebuilds."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.lexical import persist
from sidecar.retrieval.lexical.bm25 import BM25Index
from sidecar.retrieval.lexical.tokenize import Analyzer
from sidecar.store.db import Database
from tests.conftest import settings_for
from tests.retrieval.corpus import QUERIES, corpus
from tests.retrieval.test_lexical_bm25 import assert_same

DEFAULT_ANALYSER = Analyzer(RetrievalConfig().bm25_stemming).name


def built(docs: dict[int, str]) -> BM25Index:
    index = BM25Index(background_merge=False)
    labels = list(docs)
    index.add(labels, [docs[label] for label in labels], bulk=True)
    index.merge()
    return index


def test_restored_postings_score_like_a_fresh_build(tmp_path: Path) -> None:
    docs = dict(enumerate(corpus(600), start=1))
    fresh = built(docs)
    fresh.remove([3, 50])  # removed documents are not saved
    fresh.add([7], ["a replaced text about tomatoes and café"])
    live = {label: text for label, text in docs.items() if label not in (3, 50)}
    live[7] = "a replaced text about tomatoes and café"
    path = tmp_path / persist.POSTINGS_FILE
    checksum = persist.content_checksum(list(live), list(live.values()))
    persist.save(path, fresh.export(), checksum)
    postings, reason = persist.load(path, checksum, "plain")
    assert postings is not None, reason
    restored = BM25Index(background_merge=False)
    restored.restore(postings)
    assert_same(restored, live, restored.k1, restored.b, restored.epsilon)
    for query in QUERIES:
        got, want = restored.scores(query), fresh.scores(query)
        order_got, order_want = np.argsort(got[0]), np.argsort(want[0])
        np.testing.assert_array_equal(got[0][order_got], want[0][order_want])
        np.testing.assert_allclose(got[1][order_got], want[1][order_want], rtol=0, atol=1e-12)


def test_other_rows_or_damage_are_refused(tmp_path: Path) -> None:
    docs = dict(enumerate(corpus(50), start=1))
    path = tmp_path / persist.POSTINGS_FILE
    checksum = persist.content_checksum(list(docs), list(docs.values()))
    persist.save(path, built(docs).export(), checksum)
    docs[4] = "an edited text"
    assert persist.load(path, persist.content_checksum(list(docs), list(docs.values())),
                        "plain")[1].startswith("stale")
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    assert persist.load(path, checksum, "plain")[1].startswith("corrupt")
    path.unlink()
    assert persist.load(path, checksum, "plain")[1].startswith("missing")


def lexical_hits(app: App, text: str) -> list[str]:
    result = app.retriever.search(SearchQuery(text=text, limit=5, mode=Mode.LEXICAL))
    return [hit.memory.content for hit in result.hits]


@pytest.mark.parametrize("damage", ["corrupt", "stale"])
def test_the_app_saves_postings_and_rebuilds_damaged_ones(
        config: ServerConfig, embedder: Embedder, damage: str,
        caplog: pytest.LogCaptureFixture) -> None:
    app = App.open(config, embedder=embedder)
    for text in ("tomatoes grow in the garden", "the deploy pipeline failed",
                 "postgres tuning notes", "garden tools in the shed"):
        app.memories.upsert(MemoryDraft(content=text, type=MemoryType.FACT))
    before = lexical_hits(app, "garden pipeline")
    app.close()  # saves the postings of the writes above
    path = Path(config.data_dir) / persist.POSTINGS_FILE
    assert path.exists()
    again = App.open(config, embedder=embedder)
    assert lexical_hits(again, "garden pipeline") == before
    again.close()
    if damage == "corrupt":
        path.write_bytes(path.read_bytes()[:-10] + b"0123456789")
    else:  # a write the postings never saw (e.g. made by a server that crashed before close)
        db = Database(config.db_path)
        db.execute("UPDATE memories SET content = 'garden pipeline garden' WHERE seq = 3")
        db.close()
    with caplog.at_level(logging.INFO, logger="sidecar.retrieval.hybrid"):
        rebuilt = App.open(config, embedder=embedder)
    try:
        assert any(getattr(r, "reason", "").startswith(damage) for r in caplog.records)
        if damage == "corrupt":
            assert lexical_hits(rebuilt, "garden pipeline") == before
        else:
            assert lexical_hits(rebuilt, "garden pipeline")[0] == "garden pipeline garden"
    finally:
        rebuilt.close()
    assert persist.load(path, persist.content_checksum(
        [1, 2, 3, 4], [m for m in (
            "tomatoes grow in the garden", "the deploy pipeline failed",
            "garden pipeline garden" if damage == "stale" else "postgres tuning notes",
            "garden tools in the shed")]), DEFAULT_ANALYSER)[0] is not None  # saved again


def test_postings_of_another_analyser_are_refused(tmp_path: Path) -> None:
    docs = dict(enumerate(corpus(50), start=1))
    path = tmp_path / persist.POSTINGS_FILE
    checksum = persist.content_checksum(list(docs), list(docs.values()))
    persist.save(path, built(docs).export(), checksum)
    postings, reason = persist.load(path, checksum, Analyzer(stemming=True).name)
    assert postings is None and reason.startswith("stale") and "snowball-english" in reason
    loaded = persist.load(path, checksum, "plain")[0]
    assert loaded is not None
    with pytest.raises(ValueError, match="analyser"):
        BM25Index(analyzer=Analyzer(stemming=True)).restore(loaded)


def test_turning_stemming_on_rebuilds_the_saved_postings(
        config: ServerConfig, embedder: Embedder, caplog: pytest.LogCaptureFixture) -> None:
    plain = settings_for(config, retrieval=RetrievalConfig(bm25_stemming=False))
    app = App.open(config, embedder=embedder, settings=plain)
    for text in ("we booked two flights to Lisbon", "the garden needs water"):
        app.memories.upsert(MemoryDraft(content=text, type=MemoryType.FACT))
    assert lexical_hits(app, "flight") == []  # plain: "flight" is not "flights"
    app.close()
    stemmed = settings_for(config, retrieval=RetrievalConfig(bm25_stemming=True))
    with caplog.at_level(logging.INFO, logger="sidecar.retrieval.hybrid"):
        again = App.open(config, embedder=embedder, settings=stemmed)
    try:
        assert any("snowball-english" in getattr(r, "reason", "") for r in caplog.records)
        assert lexical_hits(again, "flight") == ["we booked two flights to Lisbon"]
    finally:
        again.close()
    path = Path(config.data_dir) / persist.POSTINGS_FILE
    checksum = persist.content_checksum(
        [1, 2], ["we booked two flights to Lisbon", "the garden needs water"])
    assert persist.load(path, checksum, "snowball-english")[0] is not None  # saved stemmed


def test_saved_postings_hold_no_term_of_a_removed_text(tmp_path: Path) -> None:
    docs = dict(enumerate(corpus(200), start=1))
    index = built({**docs, 999: "Giruruka the unusual dog"})
    assert "giruruka" in index.export().terms
    index.remove([999])
    postings = index.export()
    assert "giruruka" not in postings.terms
    path = tmp_path / persist.POSTINGS_FILE
    live = {label: text for label, text in docs.items()}
    persist.save(path, postings, persist.content_checksum(list(live), list(live.values())))
    assert b"giruruka" not in path.read_bytes().lower()
    fresh = built(docs)  # the saved vocabulary is a fresh build's: the same scores
    restored = BM25Index(background_merge=False)
    restored.restore(postings)
    for query in QUERIES:
        got, want = restored.scores(query), fresh.scores(query)
        order_got, order_want = np.argsort(got[0]), np.argsort(want[0])
        np.testing.assert_array_equal(got[0][order_got], want[0][order_want])
        np.testing.assert_allclose(got[1][order_got], want[1][order_want], rtol=0, atol=1e-12)
