"""bench/fleet_store.py: a store it makes is opened by a real server as any store (no
re-embed), searches find a user's own memories by their text and meaning, ListMemories counts
what was written; the same spec makes the same store on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from memsidecar.v1 import store_pb2 as s

from bench import fleet_pair, fleet_serve, fleet_store
from bench.fleet_content import Fleet, Pool, generate, load_pool
from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.metrics.config import HttpConfig
from sidecar.records import CAPTURE_SOURCE, Memory
from sidecar.store.contract import SqlStore
from sidecar.store.db import Database
from sidecar.store.memories import ListQuery
from sidecar.store.model_repo import TARGET_KEY, ModelRepo
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.repos import Repositories
from tests.conftest import Running, on_postgres, start_server
from tests.pg.cluster import Cluster

COQA = Path(os.environ.get("MEMSIDECAR_COQA", str(fleet_store.COQA)))
STORIES = 30  # of CoQA's 350: ~600 sentences to embed
STORY = 15  # sentences a story made from the docs
FLEET = Fleet(2000, 40, 4, shared=100, per_agent=25, stories=STORIES)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def coqa(cache: Path) -> Path:
    """CoQA's dev set when this machine has it, else stories in its format made from this
    repository's docs (the tool's behaviour, not the content's realism, is under test)."""
    return COQA if COQA.exists() else docs_as_stories(cache / "docs_stories.json")


@pytest.fixture(scope="module")
def pool(embedder: Embedder, cache: Path, coqa: Path) -> Pool:
    return load_pool(coqa, embedder, cache, FLEET.stories)


def docs_as_stories(path: Path) -> Path:
    """A CoQA-format file: the prose sentences of docs/ (decisions too), each once, in stories of
    ``STORY`` sentences, each sentence asked as a question whose answer is that sentence."""
    seen: dict[str, None] = {}
    for doc in sorted((Path(__file__).parents[2] / "docs").rglob("*.md")):
        for para in doc.read_text(encoding="utf-8").split("\n\n"):
            text = " ".join(para.split())
            if not text.startswith(("|", "#", "`", "- ", "* ", ">")):
                seen.update(dict.fromkeys(
                    s.strip() for s in text.split(". ") if len(s.split()) >= 5))
    sentences = list(seen)
    stories = []
    for k in range(0, len(sentences) - STORY + 1, STORY):
        story = ". ".join(sentences[k:k + STORY]) + "."
        spans = [(story.index(t), story.index(t) + len(t)) for t in sentences[k:k + STORY]]
        stories.append({
            "id": f"docs-{k // STORY}", "story": story,
            "questions": [{"input_text": f"What about {' '.join(t.split()[:3])}?"}
                          for t in sentences[k:k + STORY]],
            "answers": [{"input_text": t, "span_start": a, "span_end": b}
                        for t, (a, b) in zip(sentences[k:k + STORY], spans, strict=True)]})
    assert len(stories) >= STORIES, "too few sentences in docs/ to make the stories"
    path.write_text(json.dumps({"data": stories}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def store(pool: Pool, tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("fleet")
    db = Database(ServerConfig(data_dir=str(data)).db_path)
    try:
        assert fleet_store.write(db, FLEET, pool, EmbeddingConfig().model) == {
            "memories": FLEET.memories, "edges": Repositories.open(db).edges.count()}
    finally:
        db.close()
    return data


@pytest.fixture(scope="module")
def memories(store: Path) -> list[Memory]:
    """Every memory written, in seq order."""
    db = Database(store / "memsidecar.sqlite3")
    try:
        return everything(db)
    finally:
        db.close()


@pytest.fixture
def served(store: Path, embedder: Embedder) -> Iterator[Running]:
    live = start_server(ServerConfig(data_dir=str(store), http=HttpConfig(listen="")), embedder)
    yield live
    live.close()


def everything(db: SqlStore) -> list[Memory]:
    return Repositories.open(db).memories.list(
        ListQuery(all_agents=True, page_size=100_000, sort="stored"))[0]


def test_the_rows_are_a_fleet_of_scopes(store: Path) -> None:
    db = Database(store / "memsidecar.sqlite3")
    try:
        memories = everything(db)
        repos = Repositories.open(db)
        assert len(memories) == FLEET.memories == repos.versions.count()
        users = Counter(m.user_id for m in memories if m.user_id)
        assert len(users) == FLEET.users and len(set(users.values())) > 5  # uneven
        assert all(m.agent_id == FLEET.agent_of(int(m.user_id[5:])) for m in memories
                   if m.user_id)
        assert sum(not m.agent_id for m in memories) == FLEET.shared
        general = Counter(m.agent_id for m in memories if m.agent_id and not m.user_id)
        assert general == {f"agent-{a}": FLEET.per_agent for a in range(FLEET.agents)}
        assert [m.created_at for m in memories] == sorted(m.created_at for m in memories)
        for user in users:  # a text once in its scope
            texts = [m.content for m in memories if m.user_id == user]
            assert len(set(texts)) == len(texts)
        captured = [m for m in memories if m.source == CAPTURE_SOURCE]
        assert captured and all(m.channel_id and m.user_id for m in captured)
        ids = {m.id for m in memories}
        edges = repos.edges.all()
        assert len(edges) > FLEET.memories // 2
        assert all(e.source_id in ids and e.target_id in ids for e in edges)
        vectors = np.stack([np.asarray(repos.memories.embedding(m.id))
                            for m in memories[::50]])
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    finally:
        db.close()


def test_a_server_opens_it_without_re_embedding(served: Running, store: Path) -> None:
    assert served.server.app.reembed is None
    assert ModelRepo(served.server.app.db).get(TARGET_KEY) is None


def test_search_finds_a_users_memories_by_text_and_meaning(served: Running,
                                                          memories: list[Memory]) -> None:
    for user in ("user-3", "user-17"):
        agent = FLEET.agent_of(int(user[5:]))
        own = [m for m in memories if m.user_id == user]
        probe = next(m for m in own if m.source == CAPTURE_SOURCE)  # one sentence
        for mode in (s.SEARCH_MODE_HYBRID, s.SEARCH_MODE_VECTOR):
            hits = served.store.Search(s.SearchRequest(
                query=probe.content, agent_id=agent, user_id=user, mode=mode, limit=10)).hits
            assert hits[0].memory.content == probe.content
            assert hits[0].cosine > 0.9
            assert all(h.memory.user_id in ("", user) and h.memory.agent_id in ("", agent)
                       for h in hits)
        theirs = served.store.Search(s.SearchRequest(
            query=probe.content, agent_id=agent, user_id="user-0", limit=50)).hits
        assert all(h.memory.user_id != user for h in theirs)


def list_all(served: Running, **fields: object) -> int:
    count, token = 0, ""
    while True:
        page = served.store.ListMemories(s.ListMemoriesRequest(
            page_size=1000, page_token=token, **fields))
        count += len(page.memories)
        token = page.next_page_token
        if not token:
            return count


def test_list_memories_counts_what_was_written(served: Running,
                                               memories: list[Memory]) -> None:
    assert list_all(served, all_agents=True) == FLEET.memories
    assert list_all(served) == FLEET.shared
    agent_memories = Counter(m.agent_id for m in memories)
    for agent in ("agent-0", "agent-3"):
        assert list_all(served, agent_id=agent) == FLEET.shared + agent_memories[agent]
    users = Counter(m.user_id for m in memories)
    for user in ("user-1", "user-38"):
        agent = FLEET.agent_of(int(user[5:]))
        assert list_all(served, agent_id=agent, user_id=user) == users[user]


def test_the_same_spec_makes_the_same_store_on_postgres(
        pool: Pool, cache: Path, coqa: Path, store: Path, pg_dsn: str, config: ServerConfig,
        embedder: Embedder) -> None:
    fleet_store.build(fleet_store.parser().parse_args([
        "--memories", "2000", "--users", "40", "--agents", "4", "--shared", "100",
        "--per-agent", "25", "--dsn", pg_dsn, "--stories", str(STORIES), "--data", str(coqa),
        "--cache", str(cache)]))
    lite, pg = Database(store / "memsidecar.sqlite3"), PgDatabase(pg_dsn)
    try:
        assert fleet_store.recorded_fleet(pg) == fleet_store.recorded_fleet(lite) == FLEET
        assert ([(m.id, m.content, m.created_at, m.user_id) for m in everything(pg)]
                == [(m.id, m.content, m.created_at, m.user_id) for m in everything(lite)])
        some = [m.id for m in everything(lite)[::97]]
        for memory_id in some:
            np.testing.assert_array_equal(Repositories.open(pg).memories.embedding(memory_id),
                                          Repositories.open(lite).memories.embedding(memory_id))
        assert sorted(map(repr, Repositories.open(pg).edges.all())) == sorted(
            map(repr, Repositories.open(lite).edges.all()))
    finally:
        lite.close()
        pg.close()
    live = start_server(on_postgres(config, pg_dsn), embedder)
    try:
        assert live.server.app.reembed is None
        assert list_all(live, all_agents=True) == FLEET.memories
    finally:
        live.close()


def test_the_bench_serves_a_postgres_store_with_two_sidecars(
        pool: Pool, cache: Path, coqa: Path, pg_dsn: str, tmp_path: Path) -> None:
    fleet_store.build(fleet_store.parser().parse_args([
        "--memories", "2000", "--users", "40", "--agents", "4", "--shared", "100",
        "--per-agent", "25", "--dsn", pg_dsn, "--stories", str(STORIES), "--data", str(coqa),
        "--cache", str(cache)]))
    config = tmp_path / "scopes.toml"
    config.write_text('[retrieval]\nresidency = "scopes"\n')
    report = fleet_serve.run(fleet_serve.parser().parse_args([
        "--data-dir", str(tmp_path / "fleet"), "--dsn", pg_dsn, "--sidecars", "2",
        "--roots", str(fleet_serve.ROOT), str(fleet_serve.ROOT),
        "--config", str(config), "--active", "8", "--turns", "2", "--starts", "0",
        "--data", str(coqa), "--cache", str(cache)]))[1]
    assert "stopped" not in report
    for k in (1, 2):
        assert re.search(rf"\| first \(builds indexes\) \| {k} \| [\d.]+ \| \d+ \|", report)
        assert (tmp_path / "fleet" / f"sidecar-{k - 1}" / fleet_serve.LOG).exists()
    assert re.search(r"\| cold \(a user's first\) \| 8 \| \d", report)
    assert re.search(r"\| warm \(later\) \| 8 \| \d", report)
    warm = [int(re.search(rf"\| sidecar {k}: warm \| (\d+) \|", report).group(1))  # type: ignore[union-attr]
            for k in (1, 2)]
    assert sum(warm) == 8 and min(warm) > 0
    assert re.search(r"RSS after: \d+ MB \(peak \d+ MB\), \d+ MB \(peak \d+ MB\)", report)
    users = fleet_serve.conversations(FLEET, pool, 8, seed=1)
    for k in (0, 1):  # each sidecar loaded the scopes of its own users, and only those
        mine = [u for u in users if int(u.user[5:]) % 2 == k]
        assert mine
        loads = re.search(rf"sidecar {k + 1}: [^;]*memsidecar_scope_loads_total (\d+) -> (\d+)",
                          report)
        assert loads is not None
        started, ended = map(int, loads.groups())
        scopes = {u.user for u in mine} | {u.agent for u in mine}
        assert ended - started == len(scopes)


def test_the_seed_decides_the_store(pool: Pool) -> None:
    small = Fleet(500, 10, 2, shared=20, per_agent=5)
    first, again = (next(generate(small, pool)) for _ in range(2))
    other = next(generate(Fleet(500, 10, 2, shared=20, per_agent=5, seed=8), pool))
    assert first[0] == again[0] and first[2] == again[2]
    np.testing.assert_array_equal(first[1], again[1])
    assert [m.id for m in other[0]] != [m.id for m in first[0]]
    with pytest.raises(ValueError, match="too few"):
        Fleet(30, 10, 2, shared=20, per_agent=5).check()


def test_the_bench_serves_it_and_stops_a_server_over_its_rss_limit(
        store: Path, cache: Path, coqa: Path) -> None:
    def report(*extra: str) -> str:
        return fleet_serve.run(fleet_serve.parser().parse_args([
            "--data-dir", str(store), "--active", "4", "--turns", "2", "--data", str(coqa),
            "--cache", str(cache), *extra]))[1]

    served = report("--starts", "1", "--beside", "1", "--page-cache", "fill")
    assert "| first (" in served and "| restart 1 |" in served
    assert "re-embed rows: 0" in served
    assert re.search(r"\| cold \(a user's first\) \| 4 \| \d", served)
    assert re.search(r"\| cold, scopes of 50-150 memories \| \d+ \|", served)
    assert re.search(r"\| warm \(later\) \| 4 \| \d", served)
    assert re.search(r"\| warm, 1 users beside the cold ones \(a second client\) \| \d+ \|",
                     served)
    assert re.search(r"store file in the OS page cache: \d+%", served)
    assert re.search(r"cold calls at the server, mean ms \(p99 of the whole call [\d.]+\): "
                     r"call [\d.]+, embed [\d.]+, pinned.*; the slowest 5 %: call [\d.]+, embed",
                     served)
    assert "stopped" not in served
    stopped = report("--starts", "0", "--rss-limit-mb", "40")
    assert "stopped: the sidecar stopped before SERVING (RSS over the limit: True)" in stopped


def test_the_scope_metrics_are_picked_from_the_others() -> None:
    samples = {"memsidecar_resident_scopes": 2.0, "memsidecar_scope_loads_total": 7.0,
               'memsidecar_scope_evictions_total{reason="budget"}': 1.0,
               'memsidecar_rpc_duration_seconds_bucket{method="Inject",le="0.1"}': 9.0,
               "memsidecar_memories": 5.0, "process_resident_memory_bytes": 1e9,
               "memsidecar_scope_loads_created": 1.7e9}
    assert fleet_serve.scope_metrics(samples) == {
        "memsidecar_resident_scopes": 2.0, "memsidecar_scope_loads_total": 7.0,
        'memsidecar_scope_evictions_total{reason="budget"}': 1.0}


def test_the_bench_asks_each_user_about_the_stories_of_its_memories(
        pool: Pool, memories: list[Memory]) -> None:
    users = fleet_serve.conversations(FLEET, pool, 6, seed=1)
    assert len({u.user for u in users}) == 6
    by_user = Counter(m.user_id for m in memories)
    for user in users:
        assert user.memories == by_user[user.user]
        assert user.agent == FLEET.agent_of(int(user.user[5:]))
        stories = {s for s, qs in enumerate(pool.questions) if set(user.questions) & set(qs)}
        texts = {t for s in stories
                 for t in pool.sentences[pool.starts[s]:pool.starts[s + 1]]}
        own = [m.content for m in memories if m.user_id == user.user]
        assert all(any(c.startswith(t) for t in texts) for c in own)  # its stories' text


def test_the_pair_bench_asks_both_stores_the_same_texts(
        store: Path, cache: Path, coqa: Path, tmp_path: Path) -> None:
    large, small = tmp_path / "large", tmp_path / "small"
    shutil.copytree(store, large)
    shutil.copytree(store, small)
    report = fleet_pair.run(fleet_pair.parser().parse_args([
        "--large", str(large), "--small", str(small), "--active", "4", "--turns", "2",
        "--data", str(coqa), "--cache", str(cache)]))
    cells = r"\| [\d.]+ " * 5
    assert re.search(r"\| large \| 8 " + cells + r"\| \d+ \|", report)
    assert re.search(r"\| small \| 8 \| [\d.]+ \|", report)
    assert re.search(r"warm p50, large / small: [\d.]+; paired \(median over calls of large "
                     r"/ small\): [\d.]+; server CPU a call, large / small: [\d.]+", report)


def test_the_pair_bench_serves_postgres_stores(cache: Path, coqa: Path, pg_cluster: Cluster,
                                              tmp_path: Path) -> None:
    dsns = []
    for memories in (2000, 1000):
        dsns.append(pg_cluster.new_database())
        fleet_store.build(fleet_store.parser().parse_args([
            "--memories", str(memories), "--users", "40", "--agents", "4", "--shared", "100",
            "--per-agent", "25", "--dsn", dsns[-1], "--stories", str(STORIES),
            "--data", str(coqa), "--cache", str(cache)]))
    report = fleet_pair.run(fleet_pair.parser().parse_args([
        "--large", str(tmp_path / "large"), "--small", str(tmp_path / "small"),
        "--large-dsn", dsns[0], "--small-dsn", dsns[1], "--active", "4", "--turns", "2",
        "--data", str(coqa), "--cache", str(cache)]))
    assert re.search(r"\| large \| 8 " + r"\| [\d.]+ " * 5 + r"\| \d+ \|", report)
    assert re.search(r"\| small \| 8 \| [\d.]+ \|", report)
    for name in ("large", "small"):  # each sidecar served its own database
        assert "postgres" in (tmp_path / name / "fleet_serve.toml").read_text()


def test_a_pair_is_one_agent_s_users_nearest_in_size(pool: Pool) -> None:
    users = fleet_serve.conversations(FLEET, pool, FLEET.users, seed=1)
    large = users[::3]
    matched = fleet_pair.pairs(large, users)
    assert [a for a, _ in matched] == large
    taken: set[str] = set()
    for big, little in matched:
        assert little.agent == big.agent and little.questions == big.questions
        left = [u for u in users if u.agent == big.agent and u.user not in taken]
        assert little.user in {u.user for u in left}
        assert abs(little.memories - big.memories) == min(abs(u.memories - big.memories)
                                                          for u in left)
        if len(left) > 1:
            taken.add(little.user)
