"""Edits of the config file for UpdateConfig: format-preserving (tomlkit), written atomically.

Only the edited keys change: comments, key order and every other section stay as they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tomlkit
from tomlkit.items import AoT, Table

SECTION = "memory_injection"


def edit_injection(text: str, agent_id: str, changes: Mapping[str, Any], reset: bool) -> str:
    """Return ``text`` with the agent's (``""`` = the defaults') memory_injection edited.

    ``reset`` first removes the section (an agent then follows the defaults; the defaults fall
    back to the built-in values), then ``changes`` (TOML-native values) are set.
    """
    doc = tomlkit.parse(text)
    if agent_id:
        _edit_agent(doc, agent_id, changes, reset)
    else:
        _edit_defaults(doc, changes, reset)
    return tomlkit.dumps(doc).lstrip("\n")


def _edit_defaults(doc: tomlkit.TOMLDocument, changes: Mapping[str, Any], reset: bool) -> None:
    defaults = doc.get("defaults")
    if reset and isinstance(defaults, Table) and SECTION in defaults:
        del defaults[SECTION]
        if not defaults:
            del doc["defaults"]
    if not changes:
        return
    if "defaults" not in doc:
        doc.add(tomlkit.nl())
        doc["defaults"] = tomlkit.table(is_super_table=True)
    defaults = doc["defaults"]
    if SECTION not in defaults:
        defaults[SECTION] = tomlkit.table()
    _set(defaults[SECTION], changes)


def _edit_agent(doc: tomlkit.TOMLDocument, agent_id: str, changes: Mapping[str, Any],
                reset: bool) -> None:
    agents = doc.get("agents")
    entry = next((e for e in agents if e.get("id") == agent_id), None) if agents else None
    if reset and entry is not None and SECTION in entry:
        del entry[SECTION]
        if set(entry) == {"id"}:
            agents.remove(entry)  # type: ignore[union-attr]
            entry = None
            if not agents:
                del doc["agents"]
    if not changes:
        return
    if entry is None:
        entry = tomlkit.table()
        entry["id"] = agent_id
        if "agents" not in doc:
            doc.add(tomlkit.nl())
            doc["agents"] = AoT([])
        doc["agents"].append(entry)
    if SECTION not in entry:
        entry[SECTION] = tomlkit.table()
        _set(entry[SECTION], changes)
        entry[SECTION].add(tomlkit.nl())
    else:
        _set(entry[SECTION], changes)


def _set(table: Any, changes: Mapping[str, Any]) -> None:
    for key, value in changes.items():
        table[key] = tomlkit.item(value)
