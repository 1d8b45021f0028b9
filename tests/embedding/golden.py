"""Golden vectors: ~100 texts (1 to 256+ model tokens, other scripts, code, numbers) with the
vectors each model gave them when the file was written, and the CPU that wrote them.

A machine that reproduces every vector (cosine >= ``MIN_COSINE``) computes the same model:
``tests/embedding/test_golden.py`` checks it on the machine at hand. Written once, rewritten
only when a model changes (its sha256 is recorded beside the vectors):

    .venv/bin/python -m tests.embedding.golden --write
    .venv/bin/python -m tests.embedding.golden --check minilm-int8   # worst cosine here
"""

from __future__ import annotations

import argparse
import json
import platform
import re
from pathlib import Path

import numpy as np

from sidecar.embedding import Embedder
from sidecar.embedding.models import FP32, INT8, model_files

FOLDER = Path(__file__).parent / "golden"
TEXTS = FOLDER / "texts.json"
VECTORS = FOLDER / "vectors.npz"
META = FOLDER / "meta.json"
MODELS = (FP32, INT8)
MIN_COSINE = 0.9999


def texts() -> list[str]:
    loaded: list[str] = json.loads(TEXTS.read_text(encoding="utf-8"))
    return loaded


def vectors() -> dict[str, np.ndarray]:
    with np.load(VECTORS) as stored:
        return {name: stored[name] for name in MODELS}


def meta() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(META.read_text(encoding="utf-8"))
    return loaded


def cpu_flags() -> list[str]:
    """The SIMD flags that pick onnxruntime's kernels (x86 Linux; empty elsewhere)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    return sorted(set(re.findall(r"\b(avx\w*|amx\w*|\w*vnni\w*)\b", info)))


def write() -> None:
    corpus = texts()
    found: dict[str, np.ndarray] = {}
    shas: dict[str, str] = {}
    for name in MODELS:
        files = model_files(name, verify=True)
        found[name] = Embedder(files).embed(corpus)
        shas[name] = files.sha256
    np.savez_compressed(VECTORS, **found)
    META.write_text(json.dumps({
        "texts": len(corpus), "sha256": shas, "machine": platform.machine(),
        "cpu_flags": cpu_flags(),
    }, indent=1) + "\n", encoding="utf-8")


def worst_cosine(name: str) -> float:
    """The lowest cosine between a text's vector here (alone) and its golden vector."""
    embedder = Embedder(model_files(name, verify=True))
    found = np.stack([embedder.embed_one(text) for text in texts()])
    return float((found * vectors()[name]).sum(axis=1).min())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite vectors.npz and meta.json")
    parser.add_argument("--check", choices=MODELS, help="print the worst cosine to the golden "
                        "vectors on this machine")
    args = parser.parse_args()
    if args.write:
        write()
        print(f"wrote {VECTORS} and {META}")
    if args.check:
        print(f"{args.check}: worst cosine {worst_cosine(args.check):.7f} over {len(texts())} "
              f"texts; cpu flags {' '.join(cpu_flags()) or '(none)'}")
