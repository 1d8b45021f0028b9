"""A turn whose embedding runs beside its other work (``Injector.overlap``, the default) gets
exactly what the sequential order gives: the same items in the same order with the same
scores and cosines, the same block, the same stats, turn after turn of a conversation with
follow-ups, the focus and capture on. Two copies of one store, one injector each; captures
drained after every turn in both, the fusion's clock frozen (its recency boost reads it)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.injection.beside import Beside
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.history import Message, Role, prune_history
from sidecar.injection.pipeline import Injector
from sidecar.injection.types import Injection, InjectRequest
from sidecar.retrieval import pooled
from sidecar.retrieval.contract import Ahead, SearchQuery
from sidecar.retrieval.fusion import pool
from tests.conftest import settings_for, start_server
from tests.injection.helpers import put
from tests.injection.test_conversation import MEMORIES, TURNS

AGENT = "coder"
KEEP = 3
FROZEN_US = 1_790_000_000_000_000
# Terse follow-ups leaning on the turn before them (their searches are steered).
FOLLOW_UPS = {0: "And the refresh ones?", 1: "How do connections reach it?",
              2: "And if one goes wrong?", 3: "What coverage do they need?",
              4: "What must never be logged there?", 9: "Is there a canary?"}
CONVERSATION = [t for n, (text, _) in enumerate(TURNS)
                for t in (text, FOLLOW_UPS.get(n)) if t is not None]


def _open(config: ServerConfig, embedder: Embedder, data_dir: Path) -> App:
    here = replace(config, data_dir=str(data_dir))
    settings = settings_for(here, defaults=MemoryInjectionConfig(capture="user"))
    app = App.open(here, embedder=embedder, settings=settings)
    assert app.injector.capture is not None
    app.injector.capture.drain.close()  # drained by the test, in step in both stores
    return app


def copies(config: ServerConfig, tmp_path: Path, names: tuple[str, ...],
           open_app: Callable[[Path], App], monkeypatch: pytest.MonkeyPatch) -> list[App]:
    """An app on a copy of ``config``'s store per name, the fusion's clock frozen (its
    recency boost reads it), so two of them given the same turns answer alike."""
    apps = []
    for name in names:
        shutil.copytree(config.data_dir, tmp_path / name)
        apps.append(open_app(tmp_path / name))
    monkeypatch.setattr(pooled, "now_us", lambda: FROZEN_US)
    monkeypatch.setattr(pool, "now_us", lambda: FROZEN_US)
    return apps


def _seen(result: Injection) -> tuple[object, ...]:
    stats = result.stats
    return (result.block, result.skip_reason, result.turn,
            [(i.memory.id, i.section, i.score, i.cosine, i.content, i.is_update)
             for i in result.items],
            (stats.candidates, stats.deduped_by_id, stats.deduped_semantic,
             stats.dropped_by_budget, stats.pinned_count, stats.contextual_count,
             stats.block_tokens, stats.below_min_score))


def test_overlapped_turns_match_the_sequential_order(
        config: ServerConfig, embedder: Embedder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    live = start_server(config, embedder)
    for text in MEMORIES.values():
        put(live, text)
    live.close()
    apps = copies(config, tmp_path, ("sequential", "overlapped"),
                  lambda here: _open(config, embedder, here), monkeypatch)
    sequential = replace(apps[0].injector, overlap=False)
    overlapped = apps[1].injector
    overlapped.beside.close()
    overlapped.beside = Beside(load=lambda: 0.0)  # overlapped however busy this machine is
    assert overlapped.overlap and not overlapped.beside.busy()
    ahead: list[SearchQuery] = []
    searched_ahead = overlapped.retriever.ahead

    def spy(query: SearchQuery) -> Ahead:
        ahead.append(query)
        return searched_ahead(query)

    monkeypatch.setattr(overlapped.retriever, "ahead", spy)
    try:
        histories: dict[int, list[Message]] = {0: [], 1: []}
        for text in CONVERSATION:
            seen = []
            for n, injector in enumerate((sequential, overlapped)):
                seen.append(_seen(_turn(injector, histories[n], text)))
                assert injector.capture is not None
                injector.capture.drain.flush()
            assert seen[0] == seen[1], text
        steered = [q for q in ahead if q.context_texts]
        assert len(ahead) > len(CONVERSATION) and steered  # the follow-ups' searches, ahead too
    finally:
        for app in apps:
            app.close()


def _turn(injector: Injector, history: list[Message], text: str) -> Injection:
    """The agent loop: prune the history (the channel learns what it holds), inject, append
    the block, the turn and a reply."""
    pruned = prune_history(history, KEEP, injector.is_block).messages
    injector.observe("c1", pruned, KEEP, AGENT)
    result = injector.inject(InjectRequest(agent_id=AGENT, channel_id="c1", text=text,
                                           source="user"))
    history[:] = pruned
    if result.block:
        history.append(Message(Role.USER, result.block))
    history += [Message(Role.USER, text), Message(Role.ASSISTANT, f"Noted: {text}")]
    return result
