"""The embedding models a store can be built with, and the identity recorded beside its vectors.

A store's vectors are only comparable with queries embedded by the same graph, pooling and
token cap: ``ModelIdentity`` names all four; two identities that differ mean a re-embed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from sidecar.embedding.model_files import (
    INT8_SHA256,
    LEGACY_INT8_SHA256,
    ONNX_SHA256,
    ModelFiles,
    bundled_model_files,
    int8_model_files,
    legacy_int8_model_files,
)
from sidecar.embedding.onnx import MAX_TOKENS
from sidecar.errors import FailedPrecondition

FP32 = "minilm-fp32"  # the packaged graph: fp32 MatMuls
INT8 = "minilm-int8"  # built by `make install`: int8 MatMuls, ~2x faster, vectors move a little
MODEL_NAMES = (FP32, INT8)
POOLING = "mean"  # mean over the attention mask, then L2-normalised
_SHA256 = {FP32: ONNX_SHA256, INT8: INT8_SHA256}


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    name: str
    sha256: str  # of the ONNX file
    pooling: str = POOLING
    max_tokens: int = MAX_TOKENS

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ModelIdentity:
        return cls(**json.loads(text))


def identity(name: str, max_tokens: int = MAX_TOKENS) -> ModelIdentity:
    return ModelIdentity(name=name, sha256=_SHA256[name], max_tokens=max_tokens)


def model_files(name: str, verify: bool = False) -> ModelFiles:
    """The files of model ``name`` (one of ``MODEL_NAMES``)."""
    if name == INT8:
        return int8_model_files(verify)
    if name == FP32:
        return bundled_model_files(verify)
    raise ValueError(f"unknown embedding model {name!r}; one of {', '.join(MODEL_NAMES)}")


def serving_files(stored: ModelIdentity) -> ModelFiles | None:
    """The files that embed queries like ``stored``'s vectors, or None when this install has
    no such graph (an unknown model or build): the store is then re-embedded."""
    if stored.name not in MODEL_NAMES:
        return None
    if stored.sha256 == _SHA256[stored.name]:
        return model_files(stored.name)
    if stored.name == INT8 and stored.sha256 == LEGACY_INT8_SHA256:
        try:
            return legacy_int8_model_files()
        except FailedPrecondition:
            return None
    return None
