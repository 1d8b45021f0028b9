"""Typed configuration: the TOML schema, validation, per-agent resolution, hot reload."""

from sidecar.config.injection import (
    InjectionConfigSource,
    MemoryInjectionConfig,
    StaticInjectionConfig,
)
from sidecar.config.loader import ConfigError, load_file, load_text
from sidecar.config.schema import CONFIG_FILENAME, SECTIONS, AgentConfig, Config, Section
from sidecar.config.server import ServerConfig
from sidecar.config.store import ConfigStore
from sidecar.live import Live

__all__ = [
    "CONFIG_FILENAME",
    "SECTIONS",
    "AgentConfig",
    "Config",
    "ConfigError",
    "ConfigStore",
    "InjectionConfigSource",
    "Live",
    "MemoryInjectionConfig",
    "Section",
    "ServerConfig",
    "StaticInjectionConfig",
    "load_file",
    "load_text",
]
