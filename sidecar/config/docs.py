"""The configuration reference (Markdown), generated from the schema.

``memsidecar config docs`` prints it; ``docs/configuration.md`` is exactly that output, and a
test fails when the two differ.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from typing import Any

from sidecar.config.reloader import POLL_INTERVAL_S
from sidecar.config.report import Row, all_sections, rows
from sidecar.config.schema import CONFIG_FILENAME, INJECTION, Section
from sidecar.config.typed import hints, literal
from sidecar.knobs import rule_of

REGENERATE = ".venv/bin/memsidecar config docs > docs/configuration.md"

INTRO = f"""\
# Configuration reference

<!-- Generated from the schema by `memsidecar config docs`; do not edit by hand:
     {REGENERATE} -->

The sidecar reads one TOML file: `serve --config FILE` when given, else
`DATA_DIR/{CONFIG_FILENAME}` when it exists, else the built-in defaults below.
`memsidecar config check FILE` validates a file, runs every start-up check `serve` makes that
needs neither the network nor the data dir (listen addresses, auth for a remote address, TLS
files, the model files, the store's DSN), names those only a start can make, and prints every
effective key; `--listen`, `--http-listen` and `--data-dir` check it as `serve` would start.

Every key is optional. **hot** keys apply to the next request once the edited file has been
saved (the file is polled every {POLL_INTERVAL_S} s and read once two polls agree);
**restart** keys keep their running value until the sidecar restarts, and a reload that
changes one logs a warning. An invalid edit is rejected as a whole and the last good
configuration keeps serving.
"""

AGENTS = f"""\
## `[[agents]]`

One entry per agent that differs from the defaults: `id = "..."` (the `agent_id` of its
requests) and an `[agents.{INJECTION.name}]` table with any keys of
`[defaults.{INJECTION.name}]`. Only the keys given override the defaults; the others follow
`[defaults.{INJECTION.name}]`. `Settings.UpdateConfig` writes these tables back into the file.

```toml
[defaults.{INJECTION.name}]
search_limit = 12

[[agents]]
id = "assistant"
[agents.{INJECTION.name}]
ambient_enabled = true
pinned_types = ["todo", "goal"]
```
"""

HEADER = ["| Key | Type | Default | Allowed | Applies | Meaning |", "|---|---|---|---|---|---|"]


def reference() -> str:
    parts = [INTRO]
    for section, path in all_sections():
        parts += _section(section, path)
    parts.append(AGENTS)
    return "\n".join(parts)


def _section(section: Section, path: str) -> Iterator[str]:
    docs = {path: section.doc, **dict(_table_docs(section.cls, path))}
    tables: dict[str, list[Row]] = {}
    for row in rows(section, path):
        tables.setdefault(row.table, []).append(row)
    for table, group in tables.items():
        lines = [f"## `[{table}]`", "", docs[table], "", *HEADER, *(_line(r) for r in group)]
        yield "\n".join(lines) + "\n"


def _table_docs(cls: type, path: str) -> Iterator[tuple[str, str]]:
    """The doc of each nested table: its field's knob doc."""
    types = hints(cls)
    for f in fields(cls):
        if is_dataclass(types[f.name]):
            yield f"{path}.{f.name}", rule_of(f).doc
            yield from _table_docs(types[f.name], f"{path}.{f.name}")


def _line(row: Row) -> str:
    cells = [f"`{row.key}`", short_type(row.type), f"`{literal(row.default)}`",
             row.rule.allowed(), "restart" if row.rule.restart else "hot", row.rule.doc]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def short_type(tp: Any) -> str:
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        return f"array of {short_type(item)}"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        labels = ", ".join(m.name.lower() for m in tp)
        return f"{tp.__name__} label ({labels})"
    return {bool: "bool", int: "int", float: "float", str: "string"}.get(tp, str(tp))
