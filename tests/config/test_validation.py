"""Loading: precedence of defaults and overrides, and every kind of validation error."""

from __future__ import annotations

import pytest

from sidecar.config import ConfigError, load_text
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.records import MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.vault import VaultConfig

FILE = """
[server]
listen = "127.0.0.1:6000"

[retrieval]
rrf_k = 30

[vault]
noise_phrases = ["heartbeat"]

[defaults.memory_injection]
search_limit = 12
pinned_limit = 2

[[agents]]
id = "assistant"
[agents.memory_injection]
pinned_types = ["todo", "goal"]
ambient_enabled = true

[[agents]]
id = "bot"
"""


def test_empty_file_is_the_builtin_defaults() -> None:
    config = load_text("")
    assert config.defaults == MemoryInjectionConfig()
    assert config.retrieval == RetrievalConfig()
    assert config.vault == VaultConfig()
    assert dict(config.agents) == {}


def test_precedence_builtin_then_defaults_then_agent() -> None:
    config = load_text(FILE)
    assert config.server.listen == "127.0.0.1:6000"
    assert config.retrieval.rrf_k == 30
    assert config.retrieval.lexical_weight == RetrievalConfig().lexical_weight
    assert config.retrieval.vector == RetrievalConfig().vector
    assert config.vault.noise_phrases == ("heartbeat",)
    defaults = config.defaults
    assert (defaults.search_limit, defaults.pinned_limit) == (12, 2)
    assert defaults.max_total == MemoryInjectionConfig().max_total  # built-in default

    assistant = config.agent("assistant")
    assert assistant.overridden
    assert dict(assistant.overrides or {}) == {
        "pinned_types": (MemoryType.TODO, MemoryType.GOAL), "ambient_enabled": True}
    effective = assistant.memory_injection
    assert effective.pinned_types == (MemoryType.TODO, MemoryType.GOAL)
    assert effective.ambient_enabled is True
    assert effective.search_limit == 12 and effective.pinned_limit == 2  # from the defaults


def test_agent_without_section_and_unknown_agent_follow_the_defaults() -> None:
    config = load_text(FILE)
    for agent_id in ("bot", "nobody", ""):
        agent = config.agent(agent_id)
        assert not agent.overridden
        assert agent.memory_injection == config.defaults
        assert config.injection_for(agent_id) == config.defaults


def test_empty_override_section_counts_as_overridden() -> None:
    config = load_text('[[agents]]\nid = "a"\n[agents.memory_injection]\n')
    assert config.agent("a").overridden
    assert config.agent("a").memory_injection == config.defaults


ERRORS = [
    # (file, path of the issue, words the message must contain)
    ("[defaults.memory_injection]\nserch_limit = 3\n",
     "defaults.memory_injection.serch_limit", ['unknown key', 'did you mean "search_limit"']),
    ("[retreival]\nrrf_k = 3\n", "retreival", ['did you mean "retrieval"']),
    ("[memory_injection]\nenabled = true\n", "memory_injection",
     ['did you mean "defaults.memory_injection"']),
    ("[defaults]\nmemory_injections = {}\n", "defaults.memory_injections",
     ['did you mean "memory_injection"']),
    ("[vault]\nmax_char = 10\n", "vault.max_char", ['did you mean "max_chars"']),
    ("[server]\nmax_worker = 3\n", "server.max_worker", ['did you mean "max_workers"']),
    ('[[agents]]\nid = "a"\nmemory_injecton = {}\n', "agents[id=a].memory_injecton",
     ['did you mean "memory_injection"']),
    ('[defaults.memory_injection]\nsearch_limit = "20"\n', "defaults.memory_injection.search_limit",
     ['"20"', "must be an integer", "got a string"]),
    ("[defaults.memory_injection]\nenabled = 1\n", "defaults.memory_injection.enabled",
     ["= 1", "must be a boolean"]),
    ("[defaults.memory_injection]\nsearch_limit = 2.5\n", "defaults.memory_injection.search_limit",
     ["2.5", "must be an integer"]),
    ('[defaults.memory_injection]\nsemantic_threshold = "high"\n',
     "defaults.memory_injection.semantic_threshold", ['"high"', "must be a number"]),
    ("[defaults.memory_injection]\nsemantic_threshold = nan\n",
     "defaults.memory_injection.semantic_threshold", ["finite"]),
    ('[defaults.memory_injection]\npinned_types = "todo"\n',
     "defaults.memory_injection.pinned_types", ["must be an array"]),
    ("[defaults.memory_injection]\nsemantic_threshold = 1.5\n",
     "defaults.memory_injection.semantic_threshold", ["1.5", "allowed 0..1"]),
    ("[defaults.memory_injection]\ncontextual_min_score = -0.1\n",
     "defaults.memory_injection.contextual_min_score", ["-0.1", "allowed 0..1"]),
    ("[retrieval]\ngraph_seed_threshold = 2\n", "retrieval.graph_seed_threshold", ["allowed 0..1"]),
    ("[vault]\nduplicate_threshold = 1.01\n", "vault.duplicate_threshold", ["allowed 0..1"]),
    ("[defaults.memory_injection]\nsearch_limit = 0\n", "defaults.memory_injection.search_limit",
     ["= 0", "allowed 1..1000"]),
    ("[defaults.memory_injection]\npinned_limit = 0\n", "defaults.memory_injection.pinned_limit",
     ["allowed 1..1000"]),
    ("[defaults.memory_injection]\nmax_total = 0\n", "defaults.memory_injection.max_total",
     ["allowed 1..10000"]),
    ("[defaults.memory_injection]\nbackground_floor = -1\n",
     "defaults.memory_injection.background_floor", ["-1", "allowed 0..100"]),
    ("[defaults.memory_injection]\nown_channel_boost = -0.5\n",
     "defaults.memory_injection.own_channel_boost", ["-0.5", "allowed 0..100"]),
    ('[[agents]]\nid = "a"\n[agents.memory_injection]\nown_channel_boost = 101\n',
     "agents[id=a].memory_injection.own_channel_boost", ["101", "allowed 0..100"]),
    ("[defaults.memory_injection]\nmax_tokens = -1\n", "defaults.memory_injection.max_tokens",
     ["allowed 0..10000000"]),
    ("[retrieval]\nrrf_k = 0\n", "retrieval.rrf_k", ["allowed 0.1..10000"]),
    ("[retrieval]\ngraph_seed_limit = -1\n", "retrieval.graph_seed_limit", ["allowed 0..10000"]),
    ("[retrieval]\nlexical_weight = \"high\"\n", "retrieval.lexical_weight",
     ["must be a number, got a string"]),
    ("[retrieval]\nimportance_boost = 0.1\n", "retrieval.importance_boost",
     ["unknown key", "alpha"]),
    ("[retrieval]\nrelation_multipliers = [[\"updates\", 2.0]]\n",
     "retrieval.relation_multipliers", ["must be a table"]),
    ("[retrieval.relation_multipliers]\nupdate = 2.0\n", "retrieval.relation_multipliers.update",
     ['did you mean "updates"']),
    ("[retrieval.relation_multipliers]\ncontradicts = 101\n",
     "retrieval.relation_multipliers.contradicts", ["allowed 0..100"]),
    ("[retrieval.vector]\nhnsw_m = 1\n", "retrieval.vector.hnsw_m", ["allowed 2..128"]),
    ("[retrieval.vector]\nef_search = 64\n", "retrieval.vector.ef_search",
     ['did you mean "hnsw_ef_search"']),
    ("[retrieval]\nef_search = 64\n", "retrieval.ef_search", ["unknown key"]),
    ("[server]\nmax_workers = 0\n", "server.max_workers", ["allowed 1..1024"]),
    ('[defaults.memory_injection]\npinned_sort = "newest"\n',
     "defaults.memory_injection.pinned_sort", ['"newest"', '"recent" | "importance"']),
    ('[defaults.memory_injection]\npinned_sort = "importanse"\n',
     "defaults.memory_injection.pinned_sort", ['did you mean "importance"']),
    ('[defaults.memory_injection]\npinned_source = "vault"\n',
     "defaults.memory_injection.pinned_source", ['"types" | "snapshot"']),
    ('[defaults.memory_injection]\npinned_types = ["todo", "todos"]\n',
     "defaults.memory_injection.pinned_types",
     ['item 1 ("todos")', "must be one of identity, goal", 'did you mean "todo"']),
    ('[defaults.memory_injection]\npinned_types = ["todo", 3]\n',
     "defaults.memory_injection.pinned_types", ["item 1 (3)", "must be one of"]),
    ('[defaults.memory_injection]\npinned_types = ["todo", "Todo"]\n',
     "defaults.memory_injection.pinned_types", ['"todo" more than once']),
    ('[defaults.memory_injection]\nambient_enabled = true\npinned_types = ["todo", "goal"]\n'
     "pinned_limit = 5\nmax_total = 9\n", "defaults.memory_injection.max_total",
     ["= 9", "5 x 2 = 10", "ambient_enabled"]),
    ('[defaults.memory_injection]\npinned_types = ["todo", "goal", "fact"]\npinned_limit = 10\n'
     '[[agents]]\nid = "a"\n[agents.memory_injection]\nambient_enabled = true\n',
     "agents[id=a].memory_injection.max_total", ["= 25", "10 x 3 = 30"]),
    ("server = 5\n", "server", ["must be a table"]),
    ("defaults = 5\n", "defaults", ["must be a table"]),
    ("agents = 5\n", "agents", ["array of tables"]),
    ('[[agents]]\nname = "a"\n', "agents[0].id", ["(missing)", "non-empty string id"]),
    ('[[agents]]\nid = ""\n', "agents[0].id", ["non-empty string id"]),
    ('[[agents]]\nid = "a"\n[[agents]]\nid = "a"\n', "agents[id=a].id", ["listed twice"]),
    ('[[agents]]\nid = "a"\n[agents.memory_injection]\npinned_sort = "x"\n',
     "agents[id=a].memory_injection.pinned_sort", ['"recent" | "importance"']),
    ("[defaults.memory_injection\n", "", ["not valid TOML", "line 1"]),
]


@pytest.mark.parametrize(("text", "path", "words"), ERRORS, ids=[e[1] or "toml" for e in ERRORS])
def test_validation_error_names_key_value_and_allowed(text: str, path: str,
                                                      words: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_text(text, "test.toml")
    err = caught.value
    assert [i.path for i in err.issues] == [path], err.message
    assert err.field == path
    assert "test.toml" in err.message
    for word in words:
        assert word in err.issues[0].message, err.issues[0].message
    if path:
        assert err.issues[0].message.startswith(path)


def test_all_problems_are_reported_at_once() -> None:
    text = ("[defaults.memory_injection]\nsearch_limit = 0\npinned_sort = \"x\"\n"
            "[retrieval]\nrrf_kk = 1\n")
    with pytest.raises(ConfigError) as caught:
        load_text(text)
    assert sorted(i.path for i in caught.value.issues) == [
        "defaults.memory_injection.pinned_sort", "defaults.memory_injection.search_limit",
        "retrieval.rrf_kk"]


def test_pinned_budget_only_applies_when_ambient_is_on() -> None:
    text = ('[defaults.memory_injection]\npinned_types = ["todo", "goal"]\npinned_limit = 20\n'
            "max_total = 5\n")
    assert load_text(text).defaults.max_total == 5
    with pytest.raises(ConfigError):
        load_text(text + "ambient_enabled = true\n")
    snapshot = load_text(text + 'ambient_enabled = true\npinned_source = "snapshot"\n')
    assert snapshot.defaults.pinned_source == "snapshot"


def test_ints_are_accepted_for_floats_and_labels_are_case_insensitive() -> None:
    config = load_text('[defaults.memory_injection]\nsemantic_threshold = 1\n'
                       'pinned_types = ["TODO", " Goal"]\n')
    assert config.defaults.semantic_threshold == 1.0
    assert isinstance(config.defaults.semantic_threshold, float)
    assert config.defaults.pinned_types == (MemoryType.TODO, MemoryType.GOAL)
