"""Dataclass-driven validation: TOML tables -> typed values, with errors a person can act on.

Field types come from the dataclass annotations (bool, int, float, str, an Enum such as
MemoryType written as its lower-case label, ``tuple[T, ...]`` written as an array, or a nested
dataclass written as a sub-table); ranges and choices come from each field's ``Rule``
(``sidecar.knobs``). Every problem becomes an ``Issue`` naming the key, the value and
what is allowed; unknown keys get a "did you mean" hint.
"""

from __future__ import annotations

import difflib
import enum
import functools
import math
import typing
from collections import Counter
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any

from sidecar.knobs import Rule, rule_of


@dataclass(frozen=True, slots=True)
class Issue:
    path: str  # dotted path of the key, e.g. "defaults.memory_injection.pinned_sort"
    key: str  # the key itself ("pinned_sort")
    message: str  # a full sentence: path, value, what is allowed
    problem: str = ""  # what is allowed, without the value (for callers that echo it cut)


class Invalid(Exception):
    """One value is wrong; ``problem`` says what is allowed."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def rule_for(cls: type, name: str) -> Rule:
    """The rule of field ``name`` (an empty rule when it has none)."""
    return next(rule_of(f) for f in fields(cls) if f.name == name)


def suggest(key: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    hint = f'did you mean "{close[0]}"? ' if close else ""
    return f"unknown key; {hint}allowed keys: {', '.join(allowed)}"


def parse_table(cls: type, table: Any, path: str) -> tuple[dict[str, Any], list[Issue]]:
    """Convert the keys present in ``table``; return (values by field name, issues)."""
    if not isinstance(table, Mapping):
        leaf = path.rsplit(".", 1)[-1]
        return {}, [Issue(path, leaf, f"{path} = {literal(table)}: must be a table")]
    types = hints(cls)
    names = [f.name for f in fields(cls)]
    values: dict[str, Any] = {}
    issues: list[Issue] = []
    for key, raw in table.items():
        key_path = f"{path}.{key}" if path else key
        if key not in types:
            issues.append(Issue(key_path, key, f"{key_path}: {suggest(key, names)}"))
            continue
        tp = types[key]
        if is_dataclass(tp):
            sub, sub_issues = parse_table(tp, raw, key_path)  # type: ignore[arg-type]
            issues += sub_issues
            values[key] = tp(**sub)  # type: ignore[operator]
            continue
        rule = rule_for(cls, key)
        try:
            values[key] = convert(raw, tp, rule)
        except Invalid as err:
            issues.append(Issue(key_path, key, f"{key_path} = {literal(raw)}: {err.problem}",
                                err.problem))
    return values, issues


def convert(raw: Any, tp: Any, rule: Rule) -> Any:
    """One TOML value -> the annotated Python type, checked against the rule."""
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(raw, list):
            raise Invalid(f"must be {type_name(tp)}, got {kind(raw)}")
        items = []
        for index, item in enumerate(raw):
            try:
                items.append(convert(item, args[0], rule))
            except Invalid as err:
                raise Invalid(f"item {index} ({literal(item)}) {err.problem}") from None
        dupes = sorted(literal(i) for i, n in Counter(items).items() if n > 1)
        if dupes:
            raise Invalid(f"lists {', '.join(dupes)} more than once")
        return tuple(items)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        labels = [m.name.lower() for m in tp]
        if isinstance(raw, str) and raw.strip().lower() in labels:
            return tp[raw.strip().upper()]
        hint = difflib.get_close_matches(str(raw).lower(), labels, n=1)
        extra = f' (did you mean "{hint[0]}"?)' if hint else ""
        raise Invalid(f"must be one of {', '.join(labels)}{extra}")
    value = _scalar(raw, tp)
    problem = rule.problem(value)
    if problem is not None:
        hint = difflib.get_close_matches(str(value), list(rule.choices), n=1)
        extra = f' (did you mean "{hint[0]}"?)' if hint else ""
        raise Invalid(problem + extra)
    return value


def _scalar(raw: Any, tp: Any) -> Any:
    if tp is bool:
        if isinstance(raw, bool):
            return raw
    elif tp is int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
    elif tp is float:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            if not math.isfinite(raw):
                raise Invalid("must be a finite number")
            return float(raw)
    elif tp is str:
        if isinstance(raw, str):
            return raw
    else:
        raise TypeError(f"config schema: unsupported field type {tp!r}")
    raise Invalid(f"must be {type_name(tp)}, got {kind(raw)}")


def check_supported(cls: type) -> None:
    """Raise TypeError when a dataclass cannot be a config section (type or default missing)."""
    for f in fields(cls):
        if f.default is MISSING and f.default_factory is MISSING:
            raise TypeError(f"config schema: {cls.__name__}.{f.name} needs a default")
    for tp in hints(cls).values():
        _check_type(tp)


def _check_type(tp: Any) -> None:
    if is_dataclass(tp):
        check_supported(tp)  # type: ignore[arg-type]
    elif typing.get_origin(tp) is tuple:
        args = typing.get_args(tp)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"config schema: only tuple[T, ...] is supported, not {tp!r}")
        _check_type(args[0])
    elif tp not in (bool, int, float, str) and not (
        isinstance(tp, type) and issubclass(tp, enum.Enum)
    ):
        raise TypeError(f"config schema: unsupported field type {tp!r}")


def type_name(tp: Any) -> str:
    if typing.get_origin(tp) is tuple:
        return f"an array of {_plural(typing.get_args(tp)[0])}"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(m.name.lower() for m in tp)
    return {bool: "a boolean (true or false)", int: "an integer", float: "a number",
            str: "a string"}.get(tp, getattr(tp, "__name__", str(tp)))


def _plural(tp: Any) -> str:
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "strings (" + ", ".join(m.name.lower() for m in tp) + ")"
    return {bool: "booleans", int: "integers", float: "numbers", str: "strings"}.get(tp, "values")


def kind(raw: Any) -> str:
    if isinstance(raw, bool):
        return "a boolean"
    if isinstance(raw, int):
        return "an integer"
    if isinstance(raw, float):
        return "a number"
    if isinstance(raw, str):
        return "a string"
    if isinstance(raw, list):
        return "an array"
    if isinstance(raw, Mapping):
        return "a table"
    return type(raw).__name__


def literal(value: Any) -> str:
    """A value as it is written in TOML (enums by label, tuples as arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return f'"{value.name.lower()}"'
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def plain(value: Any) -> Any:
    """A typed value -> a TOML-native value (enum -> label, tuple -> list)."""
    if isinstance(value, enum.Enum):
        return value.name.lower()
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value
