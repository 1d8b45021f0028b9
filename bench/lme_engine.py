"""The real retrieval engine in process over a LongMemEval bench store, for the tuning grids:
its config swapped between runs (as a reload would), every question searched with its cached
embedding (no model call per search)."""

from __future__ import annotations

from pathlib import Path

from lme_data import Question, cached_embeddings

from sidecar.embedding import Embedder
from sidecar.live import Live
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.store.db import Database
from sidecar.store.repos import Repositories


class InProcess:
    def __init__(self, data_dir: Path, embedder: Embedder, model: str,
                 qs: list[Question]) -> None:
        self.vecs = dict(zip([q.id for q in qs], cached_embeddings(
            [q.text for q in qs], f"lme_q_{len(qs)}", model), strict=True))
        self.current = [RetrievalConfig()]
        self.engine = HybridRetriever(embedder, Live(lambda: self.current[0]))
        self.db = Database(data_dir / "memsidecar.sqlite3")
        repos = Repositories.open(self.db)
        self.engine.load(repos.memories, repos.edges)

    def ranked(self, config: RetrievalConfig, qs: list[Question],
               mode: Mode = Mode.HYBRID) -> dict[str, list[str]]:
        """Each question's top 10 memory ids under ``config``."""
        self.current[0] = config
        return {q.id: [h.memory.id for h in self.engine.search(SearchQuery(
            q.text, limit=10, search_limit=config.search_limit, embedding=self.vecs[q.id],
            mode=mode)).hits] for q in qs}

    def close(self) -> None:
        self.engine.close()
        self.db.close()
