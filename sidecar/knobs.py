"""Per-key rules of the config schema: the meaning, the allowed range or choices.

Outside the ``sidecar.config`` package so that dataclasses the schema imports (e.g.
``sidecar.retrieval.config``) can carry rules without an import cycle; ``sidecar.config.rules``
re-exports it. A rule can sit on a dataclass field (``field(default=...,
metadata=knob(...))``) or be given when a section is registered (``Section(rules={...})``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RULE_KEY = "memsidecar.rule"


@dataclass(frozen=True, slots=True)
class Rule:
    doc: str = ""
    ge: float | None = None  # smallest allowed value (numbers), inclusive
    le: float | None = None  # largest allowed value (numbers), inclusive
    choices: tuple[str, ...] = ()  # allowed strings (for arrays: allowed items)

    def allowed(self) -> str:
        """Human description of the range, e.g. ``0..1`` or ``>= 1``; empty when unconstrained."""
        if self.choices:
            return " | ".join(f'"{c}"' for c in self.choices)
        if self.ge is not None and self.le is not None:
            return f"{_num(self.ge)}..{_num(self.le)}"
        if self.ge is not None:
            return f">= {_num(self.ge)}"
        if self.le is not None:
            return f"<= {_num(self.le)}"
        return ""


def knob(doc: str, *, ge: float | None = None, le: float | None = None,
         choices: tuple[str, ...] = ()) -> Mapping[str, Any]:
    """Field metadata carrying a Rule: ``x: int = field(default=3, metadata=knob("...", ge=1))``."""
    return {RULE_KEY: Rule(doc=doc, ge=ge, le=le, choices=choices)}


def unit(doc: str) -> Rule:
    """A threshold or fraction in 0..1."""
    return Rule(doc=doc, ge=0.0, le=1.0)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)
