from __future__ import annotations

import shutil
import site
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from sidecar.embedding import Embedder
from sidecar.embedding.model_files import (
    INT8_SHA256,
    ModelFiles,
    file_sha256,
    int8_model_files,
    int8_model_path,
)
from sidecar.embedding.models import (
    FP32,
    INT8,
    MODEL_NAMES,
    ModelIdentity,
    identity,
    model_files,
)
from sidecar.embedding.onnx import save_optimized
from sidecar.embedding.quantize import dequantised, portable_softmax

TEXTS = [
    "We decided to use JWT tokens for API authentication.",
    "hello",
    "My grandmother grows tomatoes in her garden and sells them at the market.",
    "the deploy pipeline failed again on friday " * 30,
]


@pytest.fixture(scope="module")
def fp32() -> Embedder:
    return Embedder(model_files(FP32, verify=True))


@pytest.fixture(scope="module")
def int8() -> Embedder:
    return Embedder(model_files(INT8, verify=True))


def test_the_built_int8_model_matches_its_checksum() -> None:
    assert file_sha256(model_files(INT8).onnx) == INT8_SHA256


def test_folding_the_dequantisation_keeps_the_packaged_vectors(
        fp32: Embedder, tmp_path: Path) -> None:
    folded = tmp_path / "fp32.onnx"
    model = dequantised(onnx.load(str(fp32.files.onnx)))
    assert not any(node.op_type == "Cast" and "_q" in node.input[0] for node in model.graph.node)
    onnx.save(model, str(folded))
    plain = Embedder(ModelFiles(onnx=folded, tokenizer=fp32.files.tokenizer))
    np.testing.assert_allclose(plain.embed(TEXTS), fp32.embed(TEXTS), atol=1e-5)


def test_the_spelt_out_softmax_keeps_the_packaged_vectors(fp32: Embedder, tmp_path: Path) -> None:
    spelt = tmp_path / "fp32-softmax.onnx"
    model = portable_softmax(dequantised(onnx.load(str(fp32.files.onnx))))
    assert not [node for node in model.graph.node if node.op_type == "Softmax"]
    onnx.save(model, str(spelt))
    plain = Embedder(ModelFiles(onnx=spelt, tokenizer=fp32.files.tokenizer))
    np.testing.assert_allclose(plain.embed(TEXTS), fp32.embed(TEXTS), atol=1e-5)


def test_int8_vectors_stay_close_to_fp32(fp32: Embedder, int8: Embedder) -> None:
    cosines = (int8.embed(TEXTS) * fp32.embed(TEXTS)).sum(axis=1)
    assert cosines.min() > 0.97
    assert cosines.max() < 0.99999  # a different graph: the vectors do move


def test_int8_keeps_the_ranking_of_a_paraphrase(fp32: Embedder, int8: Embedder) -> None:
    texts = ["We decided to use JWT tokens for API authentication.",
             "The team chose JSON web tokens to authenticate the API.",
             "My grandmother grows tomatoes in her garden."]
    a, b, c = int8.embed(texts)
    fa, fb, fc = fp32.embed(texts)
    np.testing.assert_allclose([a @ b, a @ c], [fa @ fb, fa @ fc], atol=0.03)
    assert float(a @ b) > 3 * float(a @ c)


def test_the_int8_graph_is_the_same_on_every_x86_kernel(int8: Embedder) -> None:
    """Why every x86 CPU computes the same vectors: two uint8 x int8 products summed in
    int16 (``vpmaddubsw``, AVX2 and AVX-512 without VNNI) never saturate, and no ``Softmax``
    (the float operator whose last bits differ between AVX2 and AVX-512) is left."""
    model = onnx.load(str(int8.files.onnx))
    assert not [node for node in model.graph.node if node.op_type == "Softmax"]
    weights = {t.name: t for t in model.graph.initializer}
    integer = [node for node in model.graph.node if node.op_type == "MatMulInteger"]
    assert len(integer) >= 36  # every projection of the 6 layers
    for node in integer:
        w = numpy_helper.to_array(weights[node.input[1]])
        assert w.dtype == np.int8 and np.abs(w.astype(np.int64)).max() <= 64, node.name
    assert 2 * 255 * 64 <= np.iinfo(np.int16).max


def test_a_saved_optimised_graph_gives_the_same_vectors(int8: Embedder, tmp_path: Path) -> None:
    saved = tmp_path / "int8.all.onnx"
    save_optimized(str(int8.files.onnx), str(saved), "all")
    loaded = Embedder(replace(int8.files, onnx=saved), graph_level="disabled")
    np.testing.assert_allclose(loaded.embed(TEXTS), int8.embed(TEXTS), atol=1e-5)


def test_identity_round_trips_and_names_every_model() -> None:
    for name in MODEL_NAMES:
        one = identity(name)
        assert ModelIdentity.from_json(one.to_json()) == one
    assert identity(FP32) != identity(INT8)
    assert identity(FP32) != identity(FP32, max_tokens=128)
    with pytest.raises(ValueError, match="minilm-fp32"):
        model_files("nope")


def test_adopt_switches_the_model_in_place(fp32: Embedder, int8: Embedder) -> None:
    switching = Embedder(fp32.files)
    before = switching.embed_one(TEXTS[0])
    switching.adopt(int8)
    assert (switching.name, switching.generation, switching.files) == (INT8, 1, int8.files)
    np.testing.assert_allclose(switching.embed_one(TEXTS[0]), int8.embed_one(TEXTS[0]),
                               atol=1e-6)
    np.testing.assert_allclose(before, fp32.embed_one(TEXTS[0]), atol=1e-6)


def test_int8_gives_a_text_the_same_vector_alone_and_in_a_batch(int8: Embedder) -> None:
    batch = int8.embed(TEXTS, batch_size=4)
    for text, row in zip(TEXTS, batch, strict=True):
        np.testing.assert_allclose(int8.embed_one(text), row, atol=1e-6)


def test_the_built_graph_is_found_where_a_user_install_puts_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pip install --user`` puts a wheel's data under the user's base, not the prefix."""
    built = int8_model_files(verify=True).onnx
    prefix, user = tmp_path / "prefix", tmp_path / "user"
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(site, "USER_BASE", str(user))
    in_prefix, in_user = (base / "share" / "memsidecar" / built.name for base in (prefix, user))
    assert int8_model_path() == in_prefix  # found nowhere: named where make install builds it
    in_user.parent.mkdir(parents=True)
    shutil.copyfile(built, in_user)
    assert int8_model_files(verify=True).onnx == in_user
    in_prefix.parent.mkdir(parents=True)
    shutil.copyfile(built, in_prefix)
    assert int8_model_path() == in_prefix  # the environment's own comes first
