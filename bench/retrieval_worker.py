"""The sidecar's side of ``retrieval_vs_txtai.py``: ``python bench/retrieval_worker.py DIR
DATA_DIR MODEL [search|finish]``, with the tree to measure first on PYTHONPATH and
PYTHONSAFEPATH=1 (so a baseline tree's ``sidecar`` and ``kernels`` are the ones imported).

Opens ``DATA_DIR`` as the server does (``App.open``, default ``[retrieval]``, embedding model
``MODEL``, warmed up, the vector index ready) and answers the bench's requests with the
engine ``Search`` and ``Inject`` use (``App.retriever.search``), given each query's text and
precomputed vector (``DIR/queries.json``, ``DIR/query_vectors.npy``) as agent ``bench``: the
vector and BM25 lists, graph expansion, fusion and the hydrated hits, everything after the
embedding. ``finish``: as an Inject orders it, the lexical list first (``ahead``, which a
server runs beside the model; untimed), then the rest (``finish``, timed): what an Inject
waits for after its model. Protocol as ``txtai_worker.py``: ``{"ready": {...}}`` once, then one
``{"query": i, "limit": k}`` -> ``{"us": ..., "ids": [...], "scores": [...], "stages": {...}}``
per line, the call timed with ``time.perf_counter`` in this process (``stages``: the engine's
own laps, ``SearchResult.timings_us``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import sidecar  # noqa: E402
from sidecar.api.server_config import ServerConfig  # noqa: E402
from sidecar.app import App  # noqa: E402
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore  # noqa: E402
from sidecar.embedding import Embedder  # noqa: E402
from sidecar.embedding.config import EmbeddingConfig  # noqa: E402
from sidecar.embedding.models import model_files  # noqa: E402
from sidecar.metrics.config import HttpConfig  # noqa: E402
from sidecar.retrieval.config import RetrievalConfig  # noqa: E402
from sidecar.retrieval.contract import SearchQuery  # noqa: E402


def open_app(data_dir: Path, model: str) -> App:
    server = ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir), http=HttpConfig(listen=""))
    embedder = Embedder(model_files(model), **server.embedder_options())
    config = Config(retrieval=RetrievalConfig(), embedding=EmbeddingConfig(model))
    app = App.open(server, embedder=embedder,
                   settings=ConfigStore(data_dir / CONFIG_FILENAME, config, None))
    app.warm_up()
    if app.vectors is not None and not app.vectors.wait_ready(1800) and app.vectors.building:
        raise RuntimeError("vector index not ready after 30 min")
    return app


def main() -> None:
    folder, data_dir, model = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    finish = sys.argv[4:] == ["finish"]
    texts = json.loads((folder / "queries.json").read_text(encoding="utf-8"))
    vectors = np.load(folder / "query_vectors.npy")
    app = open_app(data_dir, model)
    try:
        engine = app.retriever
        vector_index = type(getattr(app.vectors, "hnsw", None) or app.vectors).__name__
        print(json.dumps({"ready": {"tree": str(Path(sidecar.__file__).parent.parent),
                                    "vectors": vector_index}}), flush=True)
        for line in sys.stdin:
            if not line.strip():
                break
            request = json.loads(line)
            i = request["query"]
            query = SearchQuery(texts[i], agent_id="bench", limit=request["limit"],
                                embedding=vectors[i])
            if finish:
                ahead = engine.ahead(query)
                start = time.perf_counter()
                result = engine.finish(ahead, vectors[i])
            else:
                start = time.perf_counter()
                result = engine.search(query)
            us = (time.perf_counter() - start) * 1e6
            print(json.dumps({"us": us, "ids": [h.memory.id for h in result.hits],
                              "scores": [h.score for h in result.hits],
                              "stages": result.timings_us}), flush=True)
    finally:
        app.close()


if __name__ == "__main__":
    main()
