from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from sidecar.embedding import Embedder
from sidecar.embedding.models import FP32, model_files


def test_vectors_are_unit_384(embedder: Embedder) -> None:
    vectors = embedder.embed(["hello world", "a much longer sentence about the weather today"])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrases_score_high_and_unrelated_low(embedder: Embedder) -> None:
    """Scores as fp32 gives them (recomputed here: no figure read off one machine)."""
    texts = ["We decided to use JWT tokens for API authentication.",
             "The team chose JSON web tokens to authenticate the API.",
             "My grandmother grows tomatoes in her garden."]
    a, b, c = embedder.embed(texts)
    fa, fb, fc = Embedder(model_files(FP32)).embed(texts)
    assert float(fa @ fb) > 3 * float(fa @ fc)  # what the texts mean, by the reference model
    np.testing.assert_allclose([a @ b, a @ c], [fa @ fb, fa @ fc], atol=0.03)
    assert float(a @ b) > 3 * float(a @ c)


def test_batch_and_single_agree(embedder: Embedder) -> None:
    texts = ["short", "a somewhat longer text that pads the batch", "x " * 300, "émoji 🚀 ok"]
    batch = embedder.embed(texts, batch_size=3)
    for text, row in zip(texts, batch, strict=True):
        np.testing.assert_allclose(embedder.embed_one(text), row, atol=1e-5)


def test_long_input_is_truncated_not_rejected(embedder: Embedder) -> None:
    long_text = "memory " * 2000
    assert embedder.count_tokens(long_text) > 256
    vector = embedder.embed_one(long_text)
    assert np.isfinite(vector).all()


def test_padding_is_to_longest(embedder: Embedder) -> None:
    encoded = embedder._tokenizer.encode_batch(["hi", "hello there"])
    assert len(encoded[0].ids) == len(encoded[1].ids) < 16


def test_count_tokens(embedder: Embedder) -> None:
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens("") == 0


class CountingSession:
    """The real session, counting its runs (which session a text was routed to)."""

    def __init__(self, session: Any) -> None:
        self.session, self.runs = session, 0

    def run(self, *args: Any) -> Any:
        self.runs += 1
        return self.session.run(*args)


def test_long_queries_run_on_more_threads_with_the_same_vectors(embedder: Embedder) -> None:
    serial = Embedder(embedder.files)
    assert serial._long is None
    routed = Embedder(embedder.files, long_text_threads=2, long_text_tokens=96)
    assert routed._long is not None
    long_session = CountingSession(routed._long)
    routed._graph = replace(routed._graph, long=long_session)  # type: ignore[arg-type]
    short, long = "a short query about tokens", "the deploy pipeline failed again " * 20
    assert embedder.count_tokens(short) + 2 < 96 <= embedder.count_tokens(long) + 2
    assert routed.is_parallel(long) and not routed.is_parallel(short)
    assert not routed.is_parallel(long, 64) and not serial.is_parallel(long)
    for n in range(88, 100):  # one token per character: the length shortcut's worst case
        text = "!" * n
        exact = min(embedder.count_tokens(text) + 2, routed.max_tokens) >= 96
        assert routed.is_parallel(text) is exact and exact is (n + 2 >= 96)
    for text in (short, long):
        np.testing.assert_allclose(routed.embed_query(text), serial.embed_query(text),
                                   atol=1e-5)
    assert long_session.runs == 1  # the long query only
    routed.embed_one(long)  # a memory (upsert, vault gate): the one-thread session
    routed.embed([long])  # an import, even a batch of one
    routed.embed([long, long])
    assert long_session.runs == 1


def test_embed_query_cuts_at_max_tokens(embedder: Embedder) -> None:
    capped = Embedder(embedder.files, max_tokens=128)
    long, short = "the deploy pipeline failed again on friday " * 40, "deploy failed"
    assert embedder.count_tokens(long) + 2 > 256
    np.testing.assert_allclose(embedder.embed_query(long, 128), capped.embed_query(long),
                               atol=1e-5)
    np.testing.assert_allclose(embedder.embed_query(long), embedder.embed_one(long), atol=1e-5)
    assert float(embedder.embed_query(long, 128) @ embedder.embed_query(long)) < 0.9999
    np.testing.assert_allclose(embedder.embed_query(short, 128), embedder.embed_one(short),
                               atol=1e-6)


def test_a_query_is_tokenised_as_a_batch_of_one_would_be(embedder: Embedder) -> None:
    """The single-text path (``encode``) against the batch path it stands for, before and
    after the cut at ``max_tokens``."""
    texts = ["short", "What did the ＣＯＭＭＩＴＴＥＥ decide?", "émoji 🚀 ok", "memory " * 400, ""]
    tokenizer = embedder._tokenizer
    for text in texts:
        (batch,) = tokenizer.encode_batch([text])
        alone = tokenizer.encode(text)
        assert alone.ids == batch.ids and alone.attention_mask == batch.attention_mask
        for cap in (0, 8):
            tokens = embedder.tokenize_query(text, cap)
            keep = min(len(batch.ids), embedder._cap(cap))
            assert tokens.ids[0].tolist() == batch.ids[: keep - 1] + batch.ids[-1:]
            assert tokens.mask[0].tolist() == batch.attention_mask[:keep]
