"""The config file's schema: one registry of typed sections, defaults in their dataclasses.

File shape::

    [server]                      ServerConfig           (read at startup; restart to change)
    [retrieval]                   RetrievalConfig        (hot, except its RESTART_KEYS)
    [retrieval.relation_multipliers]  one key per relation label
    [retrieval.vector]            VectorConfig           (the vector index)
    [vault]                       VaultConfig            (hot)
    [defaults.memory_injection]   MemoryInjectionConfig  (hot)
    [[agents]]                    id = "..."
    [agents.memory_injection]     only the keys given override the defaults (hot)

To plug in a section's dataclass: import it here, register a ``Section`` and annotate it in
``Config``, and keep its rules in step, either in the ``*_RULES`` dict below or as field
metadata on the dataclass (``field(default=..., metadata=knob("meaning", ge=0, le=1))``, from
``sidecar.knobs``); registration rules win.
``tests/config/test_schema.py`` fails on a field without a documented rule, a number without
a range, or a rule naming no field. Nested dataclass fields become sub-tables
(``[retrieval.vector]``). A ``validate()`` method on the dataclass, if any, runs after the
values are filled in; its InvalidArgument becomes a load error naming ``<section>.<key>``.
A hot section may still name ``restart_keys`` (dotted, e.g. ``vector.hnsw_m``): a reload keeps
their running value and logs that a restart applies them, as a whole non-hot section does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sidecar.config.injection import MemoryInjectionConfig
from sidecar.config.rules import Rule, unit
from sidecar.config.server import ServerConfig
from sidecar.retrieval.config import RESTART_KEYS, RetrievalConfig
from sidecar.vault.config import VaultConfig

# A cross-field check: the section's object -> [(key, problem)].
Check = Callable[[Any], list[tuple[str, str]]]


@dataclass(frozen=True)
class Section:
    name: str  # TOML table, also the attribute of Config
    cls: type
    doc: str
    rules: Mapping[str, Rule] = field(default_factory=dict)  # override field metadata
    checks: tuple[Check, ...] = ()
    hot: bool = True  # False: changes on reload are logged and wait for a restart
    restart_keys: tuple[str, ...] = ()  # of a hot section: these alone wait for a restart


SERVER_RULES: dict[str, Rule] = {
    "listen": Rule("HOST:PORT or unix:///path.sock; --listen overrides it."),
    "data_dir": Rule("Directory of the SQLite file; --data-dir overrides it."),
    "max_message_bytes": Rule("gRPC max receive/send message size.", ge=1024, le=2**31 - 1),
    "max_content_chars": Rule("Longest memory content accepted (characters).", ge=1),
    "max_workers": Rule("Worker threads serving RPCs.", ge=1, le=1024),
    "shutdown_grace_s": Rule("Seconds in-flight calls get to finish on SIGTERM/SIGINT.",
                             ge=0, le=3600),
    "embed_batch_size": Rule("Texts per onnxruntime call when embedding imports.",
                             ge=1, le=4096),
    "onnx_threads": Rule("onnxruntime intra-op threads.", ge=1, le=256),
    "onnx_long_text_threads": Rule(
        "Intra-op threads for a query (Search, Inject) of at least onnx_long_text_tokens "
        "model tokens; at most onnx_threads: no second session.", ge=1, le=256),
    "onnx_long_text_tokens": Rule(
        "Model tokens (with [CLS] and [SEP]) from which a query runs on "
        "onnx_long_text_threads.", ge=1, le=100_000),
}

VAULT_RULES: dict[str, Rule] = {
    "noise_gate": Rule("Reject tier=LOG writes and texts containing a noise phrase."),
    "noise_phrases": Rule(
        "Journal-only chatter the noise gate rejects (case-insensitive, whole words)."),
    "length_gate": Rule("Reject texts longer than max_chars."),
    "max_chars": Rule("Longest content the vault accepts (compress or split first).", ge=1),
    "pii_gate": Rule("Reject SSNs, Luhn-valid card numbers, passwords, API keys and tokens."),
    "duplicate_gate": Rule("Do not store a near-duplicate of a live memory of the same scope."),
    "duplicate_threshold": unit("Cosine at or above which a new memory is a near-duplicate."),
    "duplicate_numbers_must_match": Rule("Two texts whose numbers differ are never duplicates."),
    "max_memories_per_scope": Rule(
        "Capacity gate: most live memories per scope (0 = unlimited).", ge=0),
    "topic_upsert": Rule(
        "A REGISTER write with a known topic_id updates that register in place."),
    "snapshot_canon_limit": Rule("Most canon memories in a snapshot.", ge=0),
    "snapshot_register_limit": Rule("Most registers in a snapshot.", ge=0),
    "snapshot_max_chars": Rule("Longest snapshot block (characters).", ge=1),
    "stale_after_days": Rule(
        "ProposeDeletions: not updated or accessed for this long is stale.", ge=0.001),
    "stale_max_importance": unit(
        "ProposeDeletions: only memories at or below this importance are stale."),
    "consolidation_floor": unit("Default similarity floor of FindConsolidationCandidates."),
}

PINNED_SORTS = ("recent", "importance")
PINNED_SOURCES = ("types", "snapshot")

INJECTION_RULES: dict[str, Rule] = {
    "enabled": Rule("Inject at all; false = Inject returns an empty block."),
    "search_limit": Rule("Most hybrid-search results considered per turn.", ge=1, le=1000),
    "contextual_min_score": unit("Cosine floor of a contextual (searched) candidate."),
    "relative_floor": unit(
        "Keep a contextual hit whose cosine is at least this x the turn's best cosine (or that "
        "passes score_floor); 0 = off."),
    "score_floor": unit(
        "Keep a contextual hit whose fused score is at least this x the turn's best fused "
        "score (or that passes relative_floor); 0 = off."),
    "semantic_threshold": unit(
        "Cosine at or above which a candidate duplicates something recently injected."),
    "context_window_depth": Rule(
        "Turns before the same memory may be injected again.", ge=0, le=100_000),
    "ambient_enabled": Rule("Master switch of pinned (ambient) retrieval."),
    "pinned_types": Rule('Memory types always injected when ambient_enabled, e.g. ["todo", '
                         '"goal"].'),
    "pinned_limit": Rule("Most pinned memories per pinned type.", ge=1, le=1000),
    "pinned_sort": Rule("Which pinned memories come first.", choices=PINNED_SORTS),
    "max_total": Rule("Hard cap on memories injected per turn (pinned + contextual); at "
                      "least pinned_limit x len(pinned_types) when ambient_enabled.",
                      ge=1, le=10_000),
    "max_tokens": Rule("Token budget of the block (0 = no token budget).", ge=0, le=10_000_000),
    "max_injected_blocks_in_history": Rule(
        "Injection blocks kept in the history (0 = ephemeral).", ge=0, le=1000),
    "pinned_source": Rule('Pinned section from "types" (pinned_types) or the vault "snapshot".',
                          choices=PINNED_SOURCES),
}


def pinned_budget(config: MemoryInjectionConfig) -> list[tuple[str, str]]:
    """max_total must leave room for the pinned slots it guarantees."""
    if not (config.ambient_enabled and config.pinned_source == "types" and config.pinned_types):
        return []
    need = config.pinned_limit * len(config.pinned_types)
    if config.max_total >= need:
        return []
    return [("max_total", f"must be at least pinned_limit x len(pinned_types) = "
                          f"{config.pinned_limit} x {len(config.pinned_types)} = {need} "
                          f"when ambient_enabled (effective values)")]


SECTIONS: tuple[Section, ...] = (
    Section("server", ServerConfig, "Listening, data, limits. Read at startup only.",
            rules=SERVER_RULES, hot=False),
    # Rules are the dataclass's field metadata (sidecar/retrieval/config.py, vector_config.py).
    Section("retrieval", RetrievalConfig, "Hybrid search: fusion, boosts, graph, vector index.",
            restart_keys=RESTART_KEYS),
    Section("vault", VaultConfig, "Write gate, snapshot, hygiene suggestions.",
            rules=VAULT_RULES),
)

INJECTION = Section(
    "memory_injection", MemoryInjectionConfig,
    "Memory injection; [defaults.memory_injection] for every agent, "
    "[agents.memory_injection] for one.",
    rules=INJECTION_RULES, checks=(pinned_budget,),
)

CONFIG_FILENAME = "memsidecar.toml"


@dataclass(frozen=True, slots=True)
class AgentConfig:
    id: str
    memory_injection: MemoryInjectionConfig  # effective: defaults + overrides
    overrides: Mapping[str, Any] | None  # keys the agent's section sets; None = no section

    @property
    def overridden(self) -> bool:
        return self.overrides is not None


@dataclass(frozen=True, slots=True)
class Config:
    """One immutable snapshot of the whole file; swapped atomically on reload/update."""

    server: ServerConfig = field(default_factory=ServerConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    vault: VaultConfig = field(default_factory=VaultConfig)
    defaults: MemoryInjectionConfig = field(default_factory=MemoryInjectionConfig)
    agents: Mapping[str, AgentConfig] = field(default_factory=lambda: MappingProxyType({}))

    def agent(self, agent_id: str) -> AgentConfig:
        """The agent's effective config; agents not in the file follow the defaults."""
        found = self.agents.get(agent_id) if agent_id else None
        return found or AgentConfig(agent_id, self.defaults, None)

    def injection_for(self, agent_id: str) -> MemoryInjectionConfig:
        return self.agent(agent_id).memory_injection
