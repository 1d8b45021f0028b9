"""A query's vectors are scored among its viewer's scopes' rows (``HybridRetriever._within``,
``DenseVectors.search_within``): over a seeded replay of CoQA conversations with scopes held
on demand (one reader per story, their stories' sentences written in a random order, so the
focus searches for its anchors too) every turn's block, items and stats are those of the
scan of every held row."""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from bench.conversation_followups import split_sentences
from bench.fleet_store import COQA
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.errors import DomainError
from sidecar.injection.history import Message, Role, prune_history
from sidecar.injection.pipeline import Injector
from sidecar.injection.types import Injection, InjectRequest
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval import pooled
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion import pool
from sidecar.retrieval.hybrid import HybridRetriever
from tests.conftest import settings_for
from tests.injection.test_overlap import FROZEN_US, _seen

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
    if not COQA.exists():
        pytest.skip(f"CoQA data not at {COQA}")
    rng = random.Random(39)
    data = rng.sample(json.loads(COQA.read_text(encoding="utf-8"))["data"],
                      STORIES + SHARED_STORIES)
    drafts: list[MemoryDraft | DomainError] = [MemoryDraft(story["story"][a:b], MemoryType.FACT,
                          agent_id=AGENT if n < STORIES else "",
                          user_id=f"u{n}" if n < STORIES else "")
              for n, story in enumerate(data) for a, b in split_sentences(story["story"])]
    rng.shuffle(drafts)
    app = App.open(config, embedder=embedder)
    app.memories.import_batch(drafts)
    app.close()
    apps = []
    for name in ("every_row", "scoped"):
        shutil.copytree(config.data_dir, tmp_path / name)
        apps.append(_open(config, embedder, tmp_path / name))
    monkeypatch.setattr(pooled, "now_us", lambda: FROZEN_US)
    monkeypatch.setattr(pool, "now_us", lambda: FROZEN_US)
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
            for n, story in enumerate(data[:STORIES]):
                text = story["questions"][turn]["input_text"]
                seen = []
                for k, one in enumerate(apps):
                    result = _turn(one.injector, histories.setdefault((k, n), []), n, text,
                                   story["answers"][turn]["input_text"])
                    seen.append(_seen(result))
                    focused += k == 1 and any(i.section.name == "CONTEXTUAL"
                                              for i in result.items)
                assert seen[0] == seen[1], (n, turn, text)
        assert among > STORIES * TURNS  # searches scanned among their scopes
        assert focused
    finally:
        for one in apps:
            one.close()


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

