"""Real, varied English sentences without a download: the docstrings of installed modules.

Deterministic for a given Python (and numpy) version. Used to get real MiniLM embeddings
for the vector index recall tests and benchmarks.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import warnings
from collections.abc import Iterable

_SKIP = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test",
         "lib2to3", "ensurepip", "venv", "pydoc_data", "__main__"}
_SPLIT = re.compile(r"(?<=[.!?])\s+")


def stdlib_modules() -> list[str]:
    return sorted(n for n in sys.stdlib_module_names if not n.startswith("_") and n not in _SKIP)


def docstring_sentences(
    modules: Iterable[str], min_chars: int = 30, max_chars: int = 200
) -> list[str]:
    """Unique prose sentences from the docstrings of ``modules`` and their public members."""
    found: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in modules:
            try:
                module = importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - platform-specific modules may not import
                continue
            for obj in _members(module):
                for sentence in _SPLIT.split(" ".join((_doc(obj) or "").split())):
                    if _is_prose(sentence, min_chars, max_chars):
                        found.add(sentence)
    return sorted(found)


def _members(module: object) -> list[object]:
    objs = [module]
    for attr in sorted(dir(module)):
        if attr.startswith("_"):
            continue
        obj = getattr(module, attr, None)
        objs.append(obj)
        if inspect.isclass(obj):
            objs.extend(getattr(obj, m, None) for m in sorted(vars(obj)) if not m.startswith("_"))
    return objs


def _doc(obj: object) -> str | None:
    try:
        return inspect.getdoc(obj) if obj is not None else None
    except Exception:  # noqa: BLE001 - odd descriptors
        return None


def _is_prose(sentence: str, min_chars: int, max_chars: int) -> bool:
    return (min_chars <= len(sentence) <= max_chars and sentence[0].isupper()
            and not any(c in sentence for c in ">{}=|\\"))
