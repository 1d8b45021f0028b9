"""Typed configuration: [server] (``ServerConfig``) and memory injection."""

from sidecar.config.injection import (
    InjectionConfigSource,
    MemoryInjectionConfig,
    StaticInjectionConfig,
)
from sidecar.config.server import ServerConfig

__all__ = [
    "InjectionConfigSource",
    "MemoryInjectionConfig",
    "ServerConfig",
    "StaticInjectionConfig",
]
