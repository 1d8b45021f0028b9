"""The machine at hand computes the committed golden vectors: same text, same vector.

A failure here means this CPU (or an onnxruntime build) gives the model other numbers than the
machine that wrote ``tests/embedding/golden/`` (its CPU flags are in ``meta.json``): stores
and thresholds built elsewhere would not hold here.
"""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.embedding import Embedder
from sidecar.embedding.models import MODEL_NAMES, model_files
from tests.embedding import golden

TEXTS = golden.texts()
GOLDEN = golden.vectors()


@pytest.fixture(scope="module", params=golden.MODELS)
def model(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def assert_reproduces(found: np.ndarray, name: str) -> None:
    cosines = (found * GOLDEN[name]).sum(axis=1)
    worst = int(np.argmin(cosines))
    assert cosines[worst] >= golden.MIN_COSINE, (
        f"{name}: text {worst} ({TEXTS[worst][:40]!r}) at cosine {cosines[worst]:.6f} of its "
        f"golden vector; {int((cosines < golden.MIN_COSINE).sum())} of {len(TEXTS)} below "
        f"{golden.MIN_COSINE} (written on {golden.meta()['cpu_flags']})")


def test_the_golden_file_covers_every_model_and_its_current_build() -> None:
    assert set(golden.MODELS) == set(MODEL_NAMES)
    assert golden.meta()["sha256"] == {name: model_files(name).sha256 for name in MODEL_NAMES}
    assert {len(vectors) for vectors in GOLDEN.values()} == {len(TEXTS)} and len(TEXTS) >= 100


def test_each_text_alone_gives_its_golden_vector(model: str) -> None:
    embedder = Embedder(model_files(model, verify=True))
    assert_reproduces(np.stack([embedder.embed_one(text) for text in TEXTS]), model)


def test_one_padded_batch_of_all_gives_the_golden_vectors(model: str) -> None:
    embedder = Embedder(model_files(model))
    assert_reproduces(embedder.embed(TEXTS, batch_size=len(TEXTS)), model)


def test_two_threads_and_the_query_path_give_the_golden_vectors(model: str) -> None:
    embedder = Embedder(model_files(model), threads=2, long_text_threads=2,
                        long_text_tokens=64)
    assert_reproduces(np.stack([embedder.embed_query(text) for text in TEXTS]), model)
