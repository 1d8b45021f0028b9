"""The ``[embedding]`` section: which model embeds memories and queries."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.knobs import knob

MODEL_CHOICES = ("minilm-fp32", "minilm-int8")  # sidecar.embedding.models.MODEL_NAMES


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    model: str = field(default="minilm-int8", metadata=knob(
        "The embedding model. minilm-fp32: the packaged all-MiniLM-L6-v2 graph; minilm-int8: "
        "the same weights with integer MatMuls (built by `make install`; 7-bit weights, so "
        "every x86 CPU computes the same vectors), about 2x faster, vectors at cosine ~0.99 "
        "of fp32 (docs/benchmarks.md). A store built with another "
        "model is re-embedded in the background at start; searches use the old vectors "
        "until the swap.", choices=MODEL_CHOICES, restart=True))
