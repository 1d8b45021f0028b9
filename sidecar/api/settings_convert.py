"""Settings protobuf <-> config values. Field names match MemoryInjectionConfig's one to one."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import numpy as np
from memsidecar.v1 import settings_pb2

from sidecar.config.schema import AgentConfig
from sidecar.config.typed import plain
from sidecar.errors import InvalidArgument
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.records import MemoryType
from sidecar.redact import echo

LIST_FIELDS = {"pinned_types": "set_pinned_types"}  # repeated field -> its "replace" flag
MAX_VALUE_CHARS = 32  # a string setting (pinned_sort, ...): a label, never longer
MAX_PINNED_TYPES = len(MemoryType)  # each type at most once
_LABELS = {t.label for t in MemoryType}
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
            values = _pinned_types(getattr(msg, f.name))
            if values or getattr(msg, LIST_FIELDS[f.name]):
                changes[f.name] = values
        elif msg.HasField(f.name):
            value = getattr(msg, f.name)
            if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
                raise InvalidArgument(
                    f"memory_injection.{f.name} = {echo(value)}: at most {MAX_VALUE_CHARS} "
                    "characters", field=f"memory_injection.{f.name}", reason="BAD_CONFIG")
            changes[f.name] = float(str(np.float32(value))) if _TYPES[f.name] is float else value
    return changes


def _pinned_types(values: Sequence[str]) -> list[str]:
    """Checked before the config loader sees them, cheaply: the count first, then labels."""
    field = "memory_injection.pinned_types"
    if len(values) > MAX_PINNED_TYPES:
        raise InvalidArgument(
            f"{field} has {len(values)} items; at most {MAX_PINNED_TYPES}, each memory type "
            "once", field=field, reason="BAD_CONFIG")
    for index, value in enumerate(values):
        if value.strip().lower() not in _LABELS:
            raise InvalidArgument(
                f"{field} item {index} = {echo(value)}: must be one of "
                f"{', '.join(sorted(_LABELS))}", field=field, reason="BAD_CONFIG")
    return list(values)
