"""A cosine the sidecar reports is in [-1, 1], as the API says, even where float32 rounding
puts the dot product of a text's unit vector with itself just above 1: real sentences, each
searched and injected for with its own text, against a real server."""

from __future__ import annotations

import numpy as np
from memsidecar.v1 import injection_pb2 as i
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.embedding import Embedder
from sidecar.retrieval.contract import cosine_of
from tests.conftest import Running
from tests.retrieval.sentences import docstring_sentences

TEXTS = docstring_sentences(["json", "csv", "zipfile"])[:60]
FLOAT32_ABOVE_ONE = 1 + 2 ** -24  # a float64 at or past this is above 1 once in float32


def test_the_bound_holds_and_the_data_would_break_it(embedder: Embedder) -> None:
    """Not vacuous: the sentences' own dot products overshoot 1 before the bound."""
    vectors = embedder.embed(TEXTS).astype(np.float64)
    assert len(TEXTS) == 60 and (vectors * vectors).sum(axis=1).max() > FLOAT32_ABOVE_ONE
    assert [cosine_of(x) for x in (1.0000001, -1.0000001, 0.25)] == [1.0, -1.0, 0.25]
    assert np.isnan(cosine_of(float("nan")))  # a hit whose row is gone has no cosine


def test_search_and_inject_report_cosines_in_range(running: Running) -> None:
    for text in TEXTS:
        running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=text, type=m.MEMORY_TYPE_FACT)))
    retriever = running.server.app.retriever
    cosines = []
    for n, text in enumerate(TEXTS):
        hits = running.store.Search(s.SearchRequest(query=text, limit=3)).hits
        cosines += [h.cosine for h in hits]
        # the reference: this CPU's query and stored vectors, their dot product bounded
        stored = retriever.embedding_of(hits[0].memory.id)
        assert stored is not None
        expected = cosine_of(float(retriever.embed_query(text) @ stored))
        assert hits[0].memory.content == text
        assert abs(hits[0].cosine - expected) <= 1e-6
        items = running.injection.Inject(i.InjectRequest(channel_id=f"c{n}", text=text)).items
        cosines += [item.cosine for item in items]
    assert len(cosines) > 2 * len(TEXTS)
    assert max(cosines) <= 1.0 and min(cosines) >= -1.0
