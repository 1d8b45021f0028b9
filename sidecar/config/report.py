"""Text renderings of the schema and of a loaded config (``config check``, ``config docs``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from sidecar.config.schema import INJECTION, SECTIONS, Config, Section
from sidecar.config.typed import hints, literal
from sidecar.knobs import Rule, rule_of

LEGEND = ('# Agent sections list every effective key: "# override" marks a key the agent sets '
          "itself; unmarked keys follow [defaults.memory_injection].")


@dataclass(frozen=True, slots=True)
class Row:
    table: str  # TOML table path, e.g. "retrieval.vector"
    key: str
    default: Any
    rule: Rule
    type: Any


def rows(section: Section, path: str | None = None) -> Iterator[Row]:
    """Every key of a section, nested tables too, in declaration order."""
    yield from _rows(section.cls, path or section.name)


def _rows(cls: type, path: str) -> Iterator[Row]:
    types = hints(cls)
    default = cls()
    for f in fields(cls):
        tp = types[f.name]
        if is_dataclass(tp):
            yield from _rows(tp, f"{path}.{f.name}")  # type: ignore[arg-type]
        else:
            yield Row(path, f.name, getattr(default, f.name), rule_of(f), tp)


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
    if config.agents:
        lines.append(LEGEND)
    for agent in config.agents.values():
        lines += ["[[agents]]", f"id = {literal(agent.id)}",
                  f"[agents.{INJECTION.name}]",
                  *_values(agent.memory_injection, set(agent.overrides or ())), ""]
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
        value = getattr(obj, f.name)
        shown = literal("***") if rule_of(f).secret and value else literal(value)
        out.append(f"{f.name} = {shown}{mark}")
    return out
