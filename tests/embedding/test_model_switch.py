"""Switching [embedding] model re-embeds the store in the background, never mixing vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.model_files import (
    INT8_SHA256,
    LEGACY_INT8_SHA256,
    legacy_int8_model_files,
)
from sidecar.embedding.models import FP32, INT8, ModelIdentity, identity, model_files
from sidecar.metrics.config import HttpConfig
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.contract import SearchQuery
from sidecar.store.model_repo import MODEL_KEY, TARGET_KEY, ModelRepo
from tests.conftest import settings_for

BATCH = 8
TOPICS = ("postgres tuning", "the garden", "a trip to Lisbon", "the deploy pipeline",
          "my sister's wedding", "JWT authentication", "the quarterly budget", "a cat named Miso")
SENTENCES = [f"Note {i}: we talked about {TOPICS[i % len(TOPICS)]} on day {i // len(TOPICS)}."
             for i in range(40)]


@pytest.fixture(scope="module")
def references() -> dict[str, Embedder]:
    return {name: Embedder(model_files(name)) for name in (FP32, INT8)}


@pytest.fixture
def store_config(tmp_path: Path) -> ServerConfig:
    return ServerConfig(listen="127.0.0.1:0", data_dir=str(tmp_path / "data"),
                        embed_batch_size=BATCH, http=HttpConfig(listen=""))


def open_with(config: ServerConfig, model: str) -> App:
    return App.open(config, settings=settings_for(config, embedding=EmbeddingConfig(model)))


def fill(config: ServerConfig, texts: list[str]) -> None:
    app = open_with(config, FP32)
    for text in texts:
        app.memories.upsert(MemoryDraft(content=text, type=MemoryType.FACT))
    assert app.reembed is None and app.embedder.name == FP32
    app.close()


def progress(app: App) -> tuple[float | None, float | None]:
    """The re-embed gauges as exported."""
    sample = app.metrics.registry.get_sample_value
    return sample("memsidecar_reembed_staged_rows"), sample("memsidecar_reembed_total_rows")


def assert_all_vectors_of(app: App, reference: Embedder) -> None:
    """Every stored row and every indexed live row holds ``reference``'s vector of its text."""
    rows = app.db.execute("SELECT id, content, embedding FROM memories ORDER BY seq")
    stored = np.stack([np.frombuffer(r[2], np.float32) for r in rows])
    expected = reference.embed([r[1] for r in rows])
    np.testing.assert_allclose(stored, expected, atol=1e-5)
    for (memory_id, *_), want in zip(rows, expected, strict=True):
        indexed = app.retriever.embedding_of(memory_id)
        assert indexed is not None
        np.testing.assert_allclose(indexed, want, atol=1e-5)


def test_switching_the_model_re_embeds_and_swaps(
        store_config: ServerConfig, references: dict[str, Embedder]) -> None:
    texts = SENTENCES[:30]
    fill(store_config, texts)
    app = open_with(store_config, INT8)
    try:
        assert app.reembed is not None and app.embedder.name == FP32  # serving the old vectors
        assert not app.reembed.run(max_batches=1)
        assert progress(app) == (BATCH, len(texts))  # the metrics a scrape reads
        written = app.memories.upsert(MemoryDraft(content="a memory written mid re-embed",
                                                  type=MemoryType.FACT))
        assert_all_vectors_of(app, references[FP32])  # still one model: the old one
        hit = app.retriever.search(SearchQuery(text=texts[3], limit=1)).hits[0]
        assert hit.memory.content == texts[3]
        assert app.reembed.run()
        assert app.embedder.name == INT8 and app.reembed.done.is_set()
        assert progress(app) == (0, 0)
        assert_all_vectors_of(app, references[INT8])
        assert app.retriever.embedding_of(written.memory.id) is not None
        np.testing.assert_allclose(app.retriever.embed_query(texts[3]),
                                   references[INT8].embed_query(texts[3]), atol=1e-5)
        assert ModelRepo(app.db).get(MODEL_KEY) == identity(INT8).to_json()
        assert ModelRepo(app.db).get(TARGET_KEY) is None
        assert app.db.query_one("SELECT count(*) FROM reembed") == (0,)
    finally:
        app.close()
    again = open_with(store_config, INT8)
    assert again.reembed is None and again.embedder.name == INT8
    again.close()


def test_a_crashed_re_embed_resumes_where_it_stopped(
        store_config: ServerConfig, references: dict[str, Embedder]) -> None:
    texts = SENTENCES[:40]
    fill(store_config, texts)
    first = open_with(store_config, INT8)
    assert first.reembed is not None and not first.reembed.run(max_batches=2)
    first.close()  # as after a crash: two batches staged, nothing swapped
    resumed = open_with(store_config, INT8)
    try:
        assert resumed.reembed is not None and resumed.embedder.name == FP32
        assert resumed.reembed.repo.progress() == (2 * BATCH, len(texts))
        assert len(resumed.reembed.repo.pending(1000)) == len(texts) - 2 * BATCH
        assert resumed.reembed.run()
        assert_all_vectors_of(resumed, references[INT8])
    finally:
        resumed.close()


def test_an_empty_store_takes_the_configured_model_at_once(store_config: ServerConfig) -> None:
    app = open_with(store_config, INT8)
    try:
        assert app.reembed is None and app.embedder.name == INT8
    finally:
        app.close()


def test_a_store_of_the_8_bit_build_is_served_with_it_then_re_embedded(
        store_config: ServerConfig, references: dict[str, Embedder]) -> None:
    """An upgrade: the store's vectors came from the earlier minilm-int8 build (8-bit weights,
    CPU-dependent). Queries keep using that build until the background re-embed swaps."""
    texts = SENTENCES[:20]
    fill(store_config, texts)
    legacy = Embedder(legacy_int8_model_files(verify=True))
    app = open_with(store_config, FP32)
    rows = app.db.execute("SELECT id, content FROM memories")
    with app.db.transaction():
        for (memory_id, _), vector in zip(rows, legacy.embed([r[1] for r in rows]),
                                                strict=True):
            app.db.execute("UPDATE memories SET embedding = ? WHERE id = ?",
                           (vector.tobytes(), memory_id))
        ModelRepo(app.db).set(MODEL_KEY, ModelIdentity(INT8, LEGACY_INT8_SHA256).to_json())
    app.close()
    upgraded = open_with(store_config, INT8)
    try:
        assert upgraded.reembed is not None
        assert upgraded.embedder.files.sha256 == LEGACY_INT8_SHA256  # queries as the vectors
        np.testing.assert_allclose(upgraded.retriever.embed_query(texts[2]),
                                   legacy.embed_query(texts[2]), atol=1e-5)
        assert upgraded.reembed.run()
        assert upgraded.embedder.files.sha256 == INT8_SHA256
        assert_all_vectors_of(upgraded, references[INT8])
        assert ModelRepo(upgraded.db).get(MODEL_KEY) == identity(INT8).to_json()
    finally:
        upgraded.close()
