"""memsidecar_memories: series for the shared scope and the busiest agents only, every other
agent summed under agent="(other)"; the scrape stays bounded whatever the number of agents."""

from __future__ import annotations

from dataclasses import replace

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import ConfigError, load_text
from sidecar.embedding import Embedder
from sidecar.metrics.config import HttpConfig
from sidecar.metrics.registry import OTHER_AGENTS, Metrics, Sources
from sidecar.records import Memory, MemoryType, Tier
from tests.conftest import Running
from tests.injection.helpers import put
from tests.metrics.test_metrics_http import scrape, value


def memory(n: int, agent: str, tier: Tier = Tier.CANON) -> Memory:
    return Memory(id=f"m{n}", content="x", type=MemoryType.FACT, importance=0.5, created_at=0,
                  updated_at=0, last_accessed_at=0, access_count=0, source="", channel_id="",
                  agent_id=agent, forgotten=False, version=1, tier=tier)


def series(metrics: Metrics) -> dict[tuple[str, str, str], float]:
    text = generate_latest(metrics.registry).decode()
    return {(s.labels["agent"], s.labels["type"], s.labels["tier"]): s.value
            for family in text_string_to_metric_families(text)
            if family.name == "memsidecar_memories" for s in family.samples}


def test_five_thousand_agents_give_a_bounded_scrape() -> None:
    # agent-0000 .. agent-5999 with one memory each; five busy agents with more; the shared
    # scope; REGISTERs for some of the quiet agents.
    memories = [memory(i, f"agent-{i:04d}", Tier.REGISTER if i % 3 == 0 else Tier.CANON)
                for i in range(6000)]
    busy = [memory(10_000 + i * 10 + k, f"busy-{i}") for i in range(5) for k in range(2 + i)]
    shared = [memory(20_000 + k, "") for k in range(4)]
    everything = memories + busy + shared
    small = Metrics(Sources(memories=lambda: everything), agent_series=3)
    got = series(small)
    assert got == {
        ("", "fact", "canon"): 4,
        ("busy-4", "fact", "canon"): 6, ("busy-3", "fact", "canon"): 5,
        ("busy-2", "fact", "canon"): 4,
        (OTHER_AGENTS, "fact", "canon"): 4000 + 2 + 3,
        (OTHER_AGENTS, "fact", "register"): 2000,
    }
    assert sum(got.values()) == len(everything)  # nothing lost, nothing counted twice
    all_of_them = Metrics(Sources(memories=lambda: everything), agent_series=10_000)
    assert len(series(all_of_them)) == 6000 + 5 + 1
    default = Metrics(Sources(memories=lambda: everything))
    assert len(series(default)) == 20 + 1 + 2
    assert len(generate_latest(default.registry)) < len(
        generate_latest(all_of_them.registry)) / 50


def test_ties_pick_the_smaller_agent_id_and_zero_keeps_only_totals() -> None:
    everything = [memory(i, agent) for i, agent in enumerate(["b", "a", "c", "b", "a"])]
    assert set(series(Metrics(Sources(memories=lambda: everything), agent_series=1))) == {
        ("a", "fact", "canon"), (OTHER_AGENTS, "fact", "canon")}
    assert series(Metrics(Sources(memories=lambda: everything), agent_series=0)) == {
        (OTHER_AGENTS, "fact", "canon"): 5}


def test_an_agent_named_other_is_summed_with_the_others() -> None:
    everything = [memory(i, agent) for i, agent in enumerate(
        [OTHER_AGENTS, OTHER_AGENTS, OTHER_AGENTS, "a", "b"])]
    assert series(Metrics(Sources(memories=lambda: everything), agent_series=1)) == {
        ("a", "fact", "canon"): 1, (OTHER_AGENTS, "fact", "canon"): 4}


def test_the_key_reaches_the_served_metrics(config: ServerConfig, embedder: Embedder) -> None:
    config = replace(config, listen="127.0.0.1:0",
                     http=HttpConfig(listen="127.0.0.1:0", metrics_agents=1))
    server = create_server(App.open(config, embedder=embedder))
    server.start()
    live = Running(server)
    try:
        for i, agent in enumerate(["ada", "ada", "bob", "cy", ""]):
            put(live, f"memory number {i} about the deploy", agent_id=agent)
        got = scrape(live)
    finally:
        live.close()
    labels = {dict(key[1])["agent"] for key in got if key[0] == "memsidecar_memories"}
    assert labels == {"", "ada", OTHER_AGENTS}
    assert value(got, "memsidecar_memories", agent=OTHER_AGENTS, type="fact", tier="canon") == 2


@pytest.mark.parametrize("value", ["-1", "10001", "2.5", '"many"'])
def test_the_key_is_validated(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_text(f"[server.http]\nmetrics_agents = {value}\n")
    assert info.value.field == "server.http.metrics_agents"
    assert load_text("[server.http]\nmetrics_agents = 0\n").server.http.metrics_agents == 0
