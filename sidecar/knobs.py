"""Knobs: each config key is declared once, as a dataclass field carrying its ``Rule``.

``x: int = field(default=3, metadata=knob("meaning", ge=1, restart=True))``. Everything else
is derived from that metadata: the config loader's validation, the restart-only keys a reload
keeps at their running value, the generated configuration reference, and ``check_ranges`` for
an object built in code (tests, tools) rather than loaded from a file.

Outside the ``sidecar.config`` package so that the feature packages owning a section's dataclass
(``sidecar.injection.config``, ``sidecar.retrieval.config``, ...) can use it without an import
cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, fields, is_dataclass, replace
from typing import Any, TypeVar

from sidecar.errors import InvalidArgument

RULE_KEY = "memsidecar.rule"
C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class Rule:
    doc: str = ""
    ge: float | None = None  # smallest allowed value (numbers), inclusive
    le: float | None = None  # largest allowed value (numbers), inclusive
    choices: tuple[str, ...] = ()  # allowed strings (for arrays: allowed items)
    restart: bool = False  # True: a reload keeps the running value until a restart
    secret: bool = False  # True: never printed or logged (may hold a password)

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

    def problem(self, value: Any) -> str | None:
        """Why ``value`` breaks this rule (choices or range), or None."""
        if self.choices and isinstance(value, str) and value not in self.choices:
            return f"must be one of {self.allowed()}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if (self.ge is not None and value < self.ge) or (
                    self.le is not None and value > self.le):
                return f"out of range, allowed {self.allowed()}"
        return None


def knob(doc: str, *, ge: float | None = None, le: float | None = None,
         choices: tuple[str, ...] = (), restart: bool = False,
         secret: bool = False) -> Mapping[str, Any]:
    """Field metadata carrying a Rule: ``x: int = field(default=3, metadata=knob("...", ge=1))``."""
    return {RULE_KEY: Rule(doc=doc, ge=ge, le=le, choices=choices, restart=restart,
                           secret=secret)}


def unit(doc: str, *, restart: bool = False) -> Mapping[str, Any]:
    """Field metadata of a threshold or fraction in 0..1."""
    return knob(doc, ge=0.0, le=1.0, restart=restart)


def rule_of(item: Field[Any]) -> Rule:
    """The field's Rule; an empty one when it has none."""
    rule = item.metadata.get(RULE_KEY)
    return rule if isinstance(rule, Rule) else Rule()


def restart_keys(cls: type, prefix: str = "") -> Iterator[str]:
    """Dotted names of the restart-only keys of a section dataclass, nested tables included."""
    return _keys(cls, lambda rule: rule.restart, prefix)


def secret_keys(cls: type, prefix: str = "") -> Iterator[str]:
    """Dotted names of the keys whose values are never printed or logged."""
    return _keys(cls, lambda rule: rule.secret, prefix)


def _keys(cls: type, wanted: Callable[[Rule], bool], prefix: str) -> Iterator[str]:
    default = cls()
    for item in fields(cls):
        value = getattr(default, item.name)
        if is_dataclass(value):
            yield from _keys(type(value), wanted, f"{prefix}{item.name}.")
        elif wanted(rule_of(item)):
            yield prefix + item.name


def keep_restart_keys(running: C, loaded: C) -> C:
    """``loaded`` with ``running``'s value of every restart-only key, nested tables too."""
    changes: dict[str, Any] = {}
    for item in fields(loaded):  # type: ignore[arg-type]
        was, now = getattr(running, item.name), getattr(loaded, item.name)
        if is_dataclass(now):
            kept = keep_restart_keys(was, now)
            if kept is not now:
                changes[item.name] = kept
        elif rule_of(item).restart and was != now:
            changes[item.name] = was
    return replace(loaded, **changes) if changes else loaded  # type: ignore[type-var]


def check_ranges(obj: Any, path: str = "") -> None:
    """Raise InvalidArgument naming the first ``path.key`` whose value breaks its Rule.

    For a config object built in code; the loader checks the same rules with fuller messages.
    """
    for item in fields(obj):
        value = getattr(obj, item.name)
        where = f"{path}.{item.name}" if path else item.name
        if is_dataclass(value):
            check_ranges(value, where)
            continue
        rule = rule_of(item)
        for one in value if isinstance(value, tuple) else (value,):
            problem = rule.problem(one)
            if problem is not None:
                raise InvalidArgument(f"{where} = {one!r}: {problem}", field=where,
                                      reason="BAD_CONFIG")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)
