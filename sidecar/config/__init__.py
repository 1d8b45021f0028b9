"""Configuration machinery: the section registry, loading and validation, hot reload,
write-back, reports and the generated reference. Each section's dataclass lives with its
feature (``sidecar.injection.config``, ``sidecar.retrieval.config``, ``sidecar.vault.config``,
``sidecar.api.server_config``)."""

from sidecar.config.loader import ConfigError, load_file, load_text
from sidecar.config.schema import CONFIG_FILENAME, SECTIONS, AgentConfig, Config, Section
from sidecar.config.store import ConfigStore

__all__ = [
    "CONFIG_FILENAME",
    "SECTIONS",
    "AgentConfig",
    "Config",
    "ConfigError",
    "ConfigStore",
    "Section",
    "load_file",
    "load_text",
]
