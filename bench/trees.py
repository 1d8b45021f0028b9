"""The source tree a before/after bench runs beside this one."""

from __future__ import annotations

from pathlib import Path


def source_tree(tree: Path) -> Path:
    """``tree`` resolved, when it holds the ``sidecar`` and ``kernels`` packages: a path
    without them would have the sidecar import this tree's, and a before/after compare a tree
    with itself."""
    for package in ("sidecar", "kernels"):
        if not (tree / package / "__init__.py").is_file():
            raise SystemExit(f"{tree}: no {package} package there (a source tree to measure, "
                             "e.g. an earlier commit's `git archive` unpacked)")
    return tree.resolve()
