"""The config file's schema: one registry of typed sections; each feature owns its dataclass.

File shape::

    [server]                      ServerConfig           sidecar/api/server_config.py
    [retrieval]                   RetrievalConfig        sidecar/retrieval/config.py
    [retrieval.relation_multipliers]  one key per relation label
    [retrieval.vector]            VectorConfig           (RetrievalConfig.vector)
    [vault]                       VaultConfig            sidecar/vault/config.py
    [injection]                   ChannelStateConfig     sidecar/injection/state_config.py
    [embedding]                   EmbeddingConfig        sidecar/embedding/config.py
    [store]                       StoreConfig            sidecar/store/config.py
    [defaults.memory_injection]   MemoryInjectionConfig  sidecar/injection/config.py
    [[agents]]                    id = "..."
    [agents.memory_injection]     only the keys given override the defaults

Each key is declared once, as a field of its section's dataclass with ``knob`` metadata
(``sidecar.knobs``): meaning, range or choices, and ``restart=True`` for a key a reload keeps at
its running value. The loader's validation, the restart-only keys and ``memsidecar config docs``
are derived from it. Nested dataclass fields become sub-tables (``[retrieval.vector]``).

To plug in a section: register a ``Section`` here and annotate it in ``Config``. A check that
spans several keys is a function registered with the section (``checks``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sidecar.api.server_config import ServerConfig
from sidecar.embedding.config import EmbeddingConfig
from sidecar.injection.config import MemoryInjectionConfig, pinned_budget
from sidecar.injection.state_config import ChannelStateConfig
from sidecar.retrieval.config import RetrievalConfig
from sidecar.store.config import StoreConfig
from sidecar.vault.config import VaultConfig, no_blank_phrases

# A cross-field check: the section's object -> [(key, problem)].
Check = Callable[[Any], list[tuple[str, str]]]


@dataclass(frozen=True)
class Section:
    name: str  # TOML table, also the attribute of Config
    cls: type
    doc: str
    checks: tuple[Check, ...] = ()


SECTIONS: tuple[Section, ...] = (
    Section("server", ServerConfig, "Listening, data, limits, threads."),
    Section("retrieval", RetrievalConfig, "Hybrid search: fusion, boosts, graph, vector index."),
    Section("vault", VaultConfig, "Write gate, snapshot, hygiene suggestions.",
            checks=(no_blank_phrases,)),
    Section("injection", ChannelStateConfig, "Per-channel injection state: idle expiry."),
    Section("embedding", EmbeddingConfig, "The embedding model (a change re-embeds the store)."),
    Section("store", StoreConfig, "Where memories live: a SQLite file or a shared PostgreSQL."),
)

INJECTION = Section(
    "memory_injection", MemoryInjectionConfig,
    "Memory injection; [defaults.memory_injection] for every agent, "
    "[agents.memory_injection] for one.",
    checks=(pinned_budget,),
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
    """One immutable version of the whole file; swapped atomically on reload/update."""

    server: ServerConfig = field(default_factory=ServerConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    vault: VaultConfig = field(default_factory=VaultConfig)
    injection: ChannelStateConfig = field(default_factory=ChannelStateConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    defaults: MemoryInjectionConfig = field(default_factory=MemoryInjectionConfig)
    agents: Mapping[str, AgentConfig] = field(default_factory=lambda: MappingProxyType({}))

    def agent(self, agent_id: str) -> AgentConfig:
        """The agent's effective config; agents not in the file follow the defaults."""
        found = self.agents.get(agent_id) if agent_id else None
        return found or AgentConfig(agent_id, self.defaults, None)

    def injection_for(self, agent_id: str) -> MemoryInjectionConfig:
        return self.agent(agent_id).memory_injection
