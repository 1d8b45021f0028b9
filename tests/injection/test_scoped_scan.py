"""A query's vectors are scored among its viewer's scopes' rows (``HybridRetriever._within``,
``DenseVectors.search_within``): over a seeded replay of conversations with scopes held on
demand (one reader per document, a standard-library module's docstrings, the documents'
sentences written in a random order, so the focus searches for its anchors too) every turn's
block, items and stats are those of the scan of every held row."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.errors import DomainError
from sidecar.injection.history import Message, Role, prune_history
from sidecar.injection.pipeline import Injector
from sidecar.injection.types import Injection, InjectRequest
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.hybrid import HybridRetriever
from tests.conftest import settings_for
from tests.injection.test_overlap import _seen, copies
from tests.retrieval.sentences import docstring_sentences, stdlib_modules

AGENT = "reader"
KEEP = 3
STORIES, SHARED_STORIES, TURNS = 12, 1, 6


def _open(config: ServerConfig, embedder: Embedder, data_dir: Path) -> App:
    here = replace(config, data_dir=str(data_dir))
    return App.open(here, embedder=embedder, settings=settings_for(
        here, retrieval=RetrievalConfig(residency="scopes")))


def test_the_scoped_scan_gives_every_block_of_the_full_scan(
        config: ServerConfig, embedder: Embedder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(39)
    stories = _stories(rng, STORIES + SHARED_STORIES)
    drafts: list[MemoryDraft | DomainError] = [
        MemoryDraft(sentence, MemoryType.FACT, agent_id=AGENT if n < STORIES else "",
                    user_id=f"u{n}" if n < STORIES else "")
        for n, story in enumerate(stories) for sentence in story]
    rng.shuffle(drafts)
    app = App.open(config, embedder=embedder)
    app.memories.import_batch(drafts)
    app.close()
    apps = copies(config, tmp_path, ("every_row", "scoped"),
                  lambda here: _open(config, embedder, here), monkeypatch)
    reference = apps[0].retriever
    assert isinstance(reference, HybridRetriever) and reference.resident.on_demand
    reference.within_share = 0
    among = 0
    scoped = apps[1].retriever
    assert isinstance(scoped, HybridRetriever)
    scoped_within = scoped.vectors.search_within

    def counted(*args: object) -> object:
        nonlocal among
        among += 1
        return scoped_within(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(scoped.vectors, "search_within", counted)
    try:
        histories: dict[tuple[int, int], list[Message]] = {}
        focused = 0
        for turn in range(TURNS):
            for n, story in enumerate(stories[:STORIES]):
                # a question from the words of one of its sentences (every third turn, of
                # the shared document's), the next one the reply
                asked = stories[-1][n + turn] if turn % 3 == 2 else story[2 * turn]
                text = " ".join(asked.split()[:5]) + "?"
                seen = []
                for k, one in enumerate(apps):
                    result = _turn(one.injector, histories.setdefault((k, n), []), n, text,
                                   story[2 * turn + 1])
                    seen.append(_seen(result))
                    focused += k == 1 and any(i.section.name == "CONTEXTUAL"
                                              for i in result.items)
                assert seen[0] == seen[1], (n, turn, text)
                # the vector source alone (fusion pools BM25's hits whatever it finds)
                nearest = [[(h.memory.id, h.score) for h in one.retriever.search(SearchQuery(
                    text, agent_id=AGENT, user_id=f"u{n}", mode=Mode.VECTOR)).hits]
                    for one in apps]
                assert nearest[0] == nearest[1] and nearest[0], (n, turn, text)
        assert among > STORIES * TURNS  # searches scanned among their scopes
        assert focused
    finally:
        for one in apps:
            one.close()


def _stories(rng: random.Random, n: int) -> list[list[str]]:
    """``n`` documents of at least 24 sentences: the docstrings of standard-library modules
    drawn by ``rng`` (real prose, no download), their sentences sorted."""
    found = []
    for name in rng.sample(stdlib_modules(), len(stdlib_modules())):
        sentences = docstring_sentences([name])
        if len(sentences) >= 24:
            found.append(sentences[:40])
        if len(found) == n:
            return found
    raise AssertionError("too few documented modules")


def _turn(injector: Injector, history: list[Message], n: int, text: str,
          reply: str) -> Injection:
    """The agent loop of reader ``n`` in a channel of its own."""
    channel = f"c{n}"
    pruned = prune_history(history, KEEP, injector.is_block).messages
    injector.observe(channel, pruned, KEEP, AGENT)
    result = injector.inject(InjectRequest(agent_id=AGENT, channel_id=channel, text=text,
                                           source="user", user_id=f"u{n}"))
    history[:] = pruned
    if result.block:
        history.append(Message(Role.USER, result.block))
    history += [Message(Role.USER, text), Message(Role.ASSISTANT, reply)]
    return result

