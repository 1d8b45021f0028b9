"""Text renderings of the schema and of a loaded config (``config check``, the README table)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from typing import Any

from sidecar.config.rules import Rule
from sidecar.config.schema import INJECTION, SECTIONS, Config, Section
from sidecar.config.typed import hints, literal, rule_for

Row = tuple[str, str, Any, Rule, Any]


def rows(section: Section, path: str | None = None) -> Iterator[Row]:
    """(table path, key, default, rule, type) for every key of a section, nested tables too."""
    yield from _rows(section.cls, section, path or section.name, "")


def _rows(cls: type, section: Section, path: str, prefix: str) -> Iterator[Row]:
    types = hints(cls)
    default = cls()
    for f in fields(cls):
        tp = types[f.name]
        if is_dataclass(tp):
            yield from _rows(tp, section, f"{path}.{f.name}", f"{prefix}{f.name}.")  # type: ignore[arg-type]
        else:
            rule = rule_for(cls, f.name, section.rules, prefix)
            yield path, f.name, getattr(default, f.name), rule, tp


def all_sections() -> Iterator[tuple[Section, str]]:
    for section in SECTIONS:
        yield section, section.name
    yield INJECTION, f"defaults.{INJECTION.name}"


def render_effective(config: Config) -> str:
    """The effective config: every section, then each agent with its overridden keys marked."""
    lines: list[str] = []
    for section, path in all_sections():
        obj = config.defaults if section is INJECTION else getattr(config, section.name)
        lines += _table(path, obj)
    for agent in config.agents.values():
        status = "Override" if agent.overridden else "Using Default"
        lines.append(f"# agent {literal(agent.id)}: {status}")
        lines.append(f"[agents.{INJECTION.name}]  # id = {literal(agent.id)}")
        lines += _values(agent.memory_injection, set(agent.overrides or ()))
        lines.append("")
    return "\n".join(lines)


def _table(path: str, obj: Any) -> list[str]:
    """``[path]`` with its keys, then each nested dataclass as its own ``[path.key]`` table."""
    lines = [f"[{path}]", *_values(obj, set()), ""]
    for f in fields(obj):
        if is_dataclass(getattr(obj, f.name)):
            lines += _table(f"{path}.{f.name}", getattr(obj, f.name))
    return lines


def _values(obj: Any, overridden: set[str]) -> list[str]:
    out = []
    for f in fields(obj):
        if is_dataclass(getattr(obj, f.name)):
            continue  # a sub-table (_table)
        mark = "  # override" if f.name in overridden else ""
        out.append(f"{f.name} = {literal(getattr(obj, f.name))}{mark}")
    return out
