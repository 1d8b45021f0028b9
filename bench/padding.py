"""Padding memories for the replay benchmark, with embeddings cached in bench/.cache.

Sentences come from LongMemEval oracle messages of questions the replay does not use.
``REAL`` of them are embedded with the model. Larger stores add concatenations of two real
sentences whose vector is the normalised mean of the two embeddings: MiniLM mean-pools over
tokens, so this is close to the real embedding of the concatenation (``approximation``
measures how close) at no model cost. On a shared 2-core box the model embeds ~40
sentences/s, so 100,000 real embeddings would take ~45 minutes.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from bench.lme import CACHE
from sidecar.embedding import Embedder
from sidecar.embedding.models import FP32

REAL = 10_000
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(questions: Iterable[dict[str, Any]]) -> list[str]:
    found: set[str] = set()
    for q in questions:
        for session in q["haystack_sessions"]:
            for turn in session:
                for piece in _SPLIT.split(turn["content"]):
                    piece = piece.strip()
                    if 30 <= len(piece) <= 300:
                        found.add(piece)
    return sorted(found)


def real(questions: list[dict[str, Any]], embedder: Embedder) -> tuple[list[str], np.ndarray]:
    """``REAL`` sentences and their embeddings (cached)."""
    suffix = "" if embedder.name == FP32 else f"_{embedder.name}"
    texts_path = CACHE / "padding_texts.json"
    vectors_path = CACHE / f"padding_vectors{suffix}.npy"
    if texts_path.exists() and vectors_path.exists():
        return json.loads(texts_path.read_text()), np.load(vectors_path)
    pool = sentences(questions)
    random.Random(11).shuffle(pool)
    texts = pool[:REAL]
    vectors = np.zeros((len(texts), 384), dtype=np.float32)
    for start in range(0, len(texts), 256):
        vectors[start:start + 256] = embedder.embed(texts[start:start + 256])
        print(f"padding: embedded {min(start + 256, len(texts))}/{len(texts)}", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(vectors_path, vectors)
    texts_path.write_text(json.dumps(texts))
    return texts, vectors


def padding(texts: list[str], vectors: np.ndarray, n: int,
            seed: int = 5) -> tuple[list[str], np.ndarray]:
    """``n`` padding memories: the real ones first, then pair concatenations."""
    if n <= len(texts):
        return texts[:n], vectors[:n]
    rng = np.random.default_rng(seed)
    extra = n - len(texts)
    a = rng.integers(0, len(texts), extra)
    b = (a + 1 + rng.integers(0, len(texts) - 1, extra)) % len(texts)
    mixed = vectors[a] + vectors[b]
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    out_texts = texts + [f"{texts[i]} {texts[j]}" for i, j in zip(a, b, strict=True)]
    return out_texts, np.vstack([vectors, mixed.astype(np.float32)])


def approximation(texts: list[str], vectors: np.ndarray, embedder: Embedder,
                  sample: int = 40) -> float:
    """Mean cosine between a synthetic pair vector and the model's embedding of the pair."""
    joined, mixed = padding(texts, vectors, len(texts) + sample, seed=99)
    real_vectors = embedder.embed(joined[len(texts):])
    return float(np.mean(np.sum(real_vectors * mixed[len(texts):], axis=1)))
