"""txtai's side of ``retrieval_vs_txtai.py``, run by an interpreter that has txtai (never this
project's): ``<python> bench/txtai_worker.py DIR``.

``DIR`` holds what the bench wrote: ``docs.json`` (``[[id, text], ...]``), ``doc_vectors.npy``,
``queries.json`` (``[text, ...]``), ``query_vectors.npy`` and ``config.json`` (the
``Embeddings`` keyword arguments besides the vectors). The index is
``Embeddings(method="external", transform=..., content=True, hybrid=True, **config)``: the
external transform looks each text's vector up (documents' while indexing, queries' after), so
txtai runs no model. Protocol on stdin/stdout, one JSON line each: after indexing the worker
writes ``{"ready": {...}}``; then each request ``{"query": i, "limit": k}`` gets
``{"us": microseconds, "ids": [...]}``, the ``search`` call timed with ``time.perf_counter``
inside this process (the pipes are not counted). An empty line or EOF ends it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from txtai import Embeddings
from txtai.version import __version__


def lookup(table: dict[str, np.ndarray]):  # noqa: ANN201 (txtai's transform contract)
    def transform(inputs: list[str]) -> np.ndarray:
        return np.stack([table[text] for text in inputs])

    return transform


def main() -> None:
    folder = Path(sys.argv[1])
    docs = json.loads((folder / "docs.json").read_text(encoding="utf-8"))
    doc_vectors = np.load(folder / "doc_vectors.npy")
    queries = json.loads((folder / "queries.json").read_text(encoding="utf-8"))
    query_vectors = np.load(folder / "query_vectors.npy")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    table = {text: doc_vectors[i] for i, (_, text) in enumerate(docs)}
    embeddings = Embeddings(method="external", transform=lookup(table), content=True,
                            hybrid=True, **config)
    start = time.perf_counter()
    embeddings.index([(uid, text, None) for uid, text in docs])
    index_s = time.perf_counter() - start
    table.clear()
    table.update({text: query_vectors[i] for i, text in enumerate(queries)})
    ann = embeddings.ann
    settings = embeddings.config.get("build", {}).get("settings", {})
    ready = {"txtai": __version__, "count": embeddings.count(), "index_s": round(index_s, 1),
             "ann": embeddings.config.get("backend", "?"),
             "components": settings.get("components", type(ann.backend).__name__),
             "nprobe": ann.nprobe() if hasattr(ann, "nprobe") else None,
             "scoring": embeddings.config.get("scoring")}
    print(json.dumps({"ready": ready}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        request = json.loads(line)
        text = queries[request["query"]]
        start = time.perf_counter()
        found = embeddings.search(text, request["limit"])
        us = (time.perf_counter() - start) * 1e6
        print(json.dumps({"us": us, "ids": [r["id"] for r in found]}), flush=True)


if __name__ == "__main__":
    main()
