"""The config file's schema: one registry of typed sections, defaults in their dataclasses.

File shape::

    [server]                      ServerConfig           (read at startup; restart to change)
    [retrieval]                   RetrievalConfig        (hot)
    [vault]                       VaultConfig            (hot)
    [defaults.memory_injection]   MemoryInjectionConfig  (hot)
    [[agents]]                    id = "..."
    [agents.memory_injection]     only the keys given override the defaults (hot)

To plug in a section's real dataclass: import it here instead of the placeholder, give it
rules (field metadata via ``rules.knob`` on the dataclass, or ``rules={...}`` below), and
change the matching annotation of ``Config``. A ``validate()`` method on the dataclass, if it
has one, is called after the values are filled in; its InvalidArgument becomes a load error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sidecar.config.injection import MemoryInjectionConfig
from sidecar.config.placeholders import RetrievalConfig, VaultConfig
from sidecar.config.rules import Rule, unit
from sidecar.config.server import ServerConfig

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
}

PINNED_SORTS = ("recent", "importance")
PINNED_SOURCES = ("types", "snapshot")

INJECTION_RULES: dict[str, Rule] = {
    "enabled": Rule("Inject at all; false = Inject returns an empty block."),
    "search_limit": Rule("Most hybrid-search results considered per turn.", ge=1, le=1000),
    "contextual_min_score": unit("Cosine floor of a contextual (searched) candidate."),
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
    Section("retrieval", RetrievalConfig, "Hybrid search: fusion, boosts, graph, HNSW."),
    Section("vault", VaultConfig, "Write gate, snapshot, hygiene suggestions."),
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
