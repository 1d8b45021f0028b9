"""TOML text -> a validated ``Config``, or a ``ConfigError`` listing every problem found."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sidecar.config.schema import INJECTION, SECTIONS, AgentConfig, Config, Section
from sidecar.config.typed import Issue, literal, parse_table, suggest
from sidecar.errors import InvalidArgument

TOP_LEVEL = [*(s.name for s in SECTIONS), "defaults", "agents"]
AGENT_KEYS = ["id", INJECTION.name]


class ConfigError(InvalidArgument):
    """The file (or an update) is invalid; ``issues`` lists every problem."""

    def __init__(self, origin: str, issues: list[Issue]) -> None:
        lines = "\n".join(f"  - {issue.message}" for issue in issues)
        super().__init__(f"invalid config {origin}:\n{lines}", reason="BAD_CONFIG",
                         field=issues[0].path if issues else "")
        self.issues = tuple(issues)


def load_file(path: Path) -> Config:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(str(path), [Issue("", "", f"cannot read {path}: {err}")]) from err
    return load_text(text, str(path))


def load_text(text: str, origin: str = "<text>") -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(origin, [Issue("", "", f"not valid TOML: {err}")]) from err
    config, issues = parse(data)
    if issues:
        raise ConfigError(origin, issues)
    return config


def parse(data: Mapping[str, Any]) -> tuple[Config, list[Issue]]:
    issues: list[Issue] = []
    for key in data:
        if key not in TOP_LEVEL:
            hint = suggest(key, [*TOP_LEVEL, f"defaults.{INJECTION.name}"])
            issues.append(Issue(key, key, f"{key}: {hint}"))
    sections = {s.name: _section(s, data.get(s.name, {}), s.name, issues) for s in SECTIONS}
    defaults = _defaults(data.get("defaults", {}), issues)
    agents = _agents(data.get("agents", []), defaults, issues)
    config = Config(**sections, defaults=defaults, agents=MappingProxyType(agents))
    return config, issues


def _section(section: Section, table: Any, path: str, issues: list[Issue]) -> Any:
    values, found = parse_table(section.cls, table, path)
    issues += found
    obj = section.cls(**values)
    issues += _checks(section, obj, path)
    return obj


def _checks(section: Section, obj: Any, path: str) -> list[Issue]:
    return [Issue(f"{path}.{key}", key, f"{path}.{key} = {literal(getattr(obj, key))}: {msg}",
                  msg) for check in section.checks for key, msg in check(obj)]


def _defaults(table: Any, issues: list[Issue]) -> Any:
    if not isinstance(table, Mapping):
        issues.append(Issue("defaults", "defaults",
                            f"defaults = {literal(table)}: must be a table"))
        return INJECTION.cls()
    for key in table:
        if key != INJECTION.name:
            issues.append(Issue(f"defaults.{key}", key,
                                f"defaults.{key}: {suggest(key, [INJECTION.name])}"))
    return _section(INJECTION, table.get(INJECTION.name, {}), f"defaults.{INJECTION.name}",
                    issues)


def _agents(entries: Any, defaults: Any, issues: list[Issue]) -> dict[str, AgentConfig]:
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        issues.append(Issue("agents", "agents",
                            f"agents = {literal(entries)}: must be an array of tables "
                            "([[agents]])"))
        return {}
    agents: dict[str, AgentConfig] = {}
    for index, entry in enumerate(entries):
        agent_id = entry.get("id")
        if not isinstance(agent_id, str) or not agent_id.strip():
            shown = "(missing)" if agent_id is None else literal(agent_id)
            issues.append(Issue(f"agents[{index}].id", "id", f"agents[{index}].id = {shown}: "
                                "every [[agents]] needs a non-empty string id"))
            continue
        path = f"agents[id={agent_id}]"
        if agent_id in agents:
            issues.append(Issue(f"{path}.id", "id",
                                f"{path}.id = {literal(agent_id)}: listed twice in [[agents]]"))
            continue
        for key in entry:
            if key not in AGENT_KEYS:
                problem = suggest(key, AGENT_KEYS)
                issues.append(Issue(f"{path}.{key}", key, f"{path}.{key}: {problem}"))
        agents[agent_id] = _agent(agent_id, entry.get(INJECTION.name), path, defaults, issues)
    return agents


def _agent(agent_id: str, table: Any, path: str, defaults: Any,
           issues: list[Issue]) -> AgentConfig:
    if table is None:
        return AgentConfig(agent_id, defaults, None)
    section_path = f"{path}.{INJECTION.name}"
    values, found = parse_table(INJECTION.cls, table, section_path)
    issues += found
    effective = replace(defaults, **values)
    issues += _checks(INJECTION, effective, section_path)
    return AgentConfig(agent_id, effective, MappingProxyType(values))
