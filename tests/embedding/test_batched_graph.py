"""Batching the int8 model against the vector each text gets alone (decision 0025).

The shipped graph quantises a batch's activations with scales over the whole batch, so a
batched text gets another vector; the rewrite in ``bench.embed_batch_graphs`` (per-text
quantisation and softmax sums) gives every golden text, in batches of mixed lengths, the
vector it gets alone. Per-text quantisation without the per-text softmax sums is exact only
without padding (the bench, not this file, shows how far padding moves it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.embed_batch_graphs import build
from bench.embed_batching import padded, runner
from sidecar.embedding import Embedder
from sidecar.embedding.models import INT8, model_files
from sidecar.embedding.onnx import QueryTokens
from tests.embedding import golden

EXACT = "per-sample quantisation and softmax sums"


@pytest.fixture(scope="module")
def alone() -> Embedder:
    return Embedder(model_files(INT8, verify=True))


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build(model_files(INT8).onnx, tmp_path_factory.mktemp("batch_graphs"))


def golden_batches(alone: Embedder) -> list[list[QueryTokens]]:
    """The golden texts in file order, in batches of 2, 3, 5, 8 and 16 (mixed lengths)."""
    tokens = [alone.tokenize_query(text) for text in golden.texts()]
    batches: list[list[QueryTokens]] = []
    start, sizes = 0, (2, 3, 5, 8, 16)
    while start < len(tokens):
        batches.append(tokens[start : start + sizes[len(batches) % len(sizes)]])
        start += len(batches[-1])
    return batches


def cosines(run_path: Path, level: str, alone: Embedder,
            batches: list[list[QueryTokens]]) -> np.ndarray:
    run = runner(run_path, level)
    found = [float(v @ alone.embed_tokens(t))
             for batch in batches for t, v in zip(batch, run(*padded(batch)), strict=True)]
    return np.array(found)


def test_the_golden_batches_mix_lengths(alone: Embedder) -> None:
    batches = golden_batches(alone)
    assert sum(len(b) for b in batches) == len(golden.texts())
    assert all(len({t.length for t in b}) > 1 for b in batches if len(b) > 2)


def test_the_shipped_int8_graph_gives_a_batched_text_another_vector(alone: Embedder) -> None:
    found = cosines(model_files(INT8).onnx, "all", alone, golden_batches(alone))
    assert found.min() < golden.MIN_COSINE  # why Embedder.embed runs it one text at a time


def test_per_text_quantisation_and_softmax_sums_give_each_text_its_vector_alone(
        alone: Embedder, graphs: dict[str, Path]) -> None:
    found = cosines(graphs[EXACT], "disabled", alone, golden_batches(alone))
    worst = int(np.argmin(found))
    assert found[worst] >= golden.MIN_COSINE, f"golden text {worst} at cosine {found[worst]}"


def test_per_text_quantisation_alone_is_exact_without_padding(
        alone: Embedder, graphs: dict[str, Path]) -> None:
    tokens = [alone.tokenize_query(text) for text in golden.texts()]
    one_length = [[t, t, t] for t in tokens]
    found = cosines(graphs["per-sample quantisation"], "disabled", alone, one_length)
    assert found.min() >= golden.MIN_COSINE
