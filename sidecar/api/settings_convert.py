"""Settings protobuf <-> config values. Field names match MemoryInjectionConfig's one to one."""

from __future__ import annotations

import typing
from dataclasses import fields
from typing import Any

import numpy as np
from memsidecar.v1 import settings_pb2

from sidecar.config.schema import AgentConfig
from sidecar.config.typed import plain
from sidecar.injection.config import MemoryInjectionConfig

LIST_FIELDS = {"pinned_types": "set_pinned_types"}  # repeated field -> its "replace" flag
_TYPES = typing.get_type_hints(MemoryInjectionConfig)


def injection_to_pb(config: MemoryInjectionConfig) -> settings_pb2.MemoryInjectionConfig:
    msg = settings_pb2.MemoryInjectionConfig()
    for f in fields(config):
        value = plain(getattr(config, f.name))
        if f.name in LIST_FIELDS:
            getattr(msg, f.name).extend(value)
        else:
            setattr(msg, f.name, value)
    return msg


def config_response(agent: AgentConfig) -> settings_pb2.GetConfigResponse:
    return settings_pb2.GetConfigResponse(
        agent_id=agent.id,
        memory_injection=injection_to_pb(agent.memory_injection),
        memory_injection_overridden=agent.overridden,
    )


def changes_from_pb(msg: settings_pb2.MemoryInjectionConfig) -> dict[str, Any]:
    """The fields an update sets, as TOML-native values (validated by the config loader).

    A repeated field changes when its flag is set (that is how to clear it) or when non-empty.
    float fields travel as float32: they are written back as the shortest decimal that
    round-trips (0.85, not 0.8500000238418579).
    """
    changes: dict[str, Any] = {}
    for f in fields(MemoryInjectionConfig):
        if f.name in LIST_FIELDS:
            values = list(getattr(msg, f.name))
            if values or getattr(msg, LIST_FIELDS[f.name]):
                changes[f.name] = values
        elif msg.HasField(f.name):
            value = getattr(msg, f.name)
            changes[f.name] = float(str(np.float32(value))) if _TYPES[f.name] is float else value
    return changes
