"""A before/after bench refuses a baseline path without the packages to measure: the sidecar
started there would import this tree's, and the run would compare a tree with itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.agent_loop_replay import python_path
from bench.trees import source_tree

ROOT = Path(__file__).resolve().parent.parent.parent


def test_this_tree_is_a_source_tree() -> None:
    assert source_tree(ROOT / "tests" / "..") == ROOT


@pytest.mark.parametrize("packages", [(), ("sidecar",), ("kernels",)])
def test_a_path_without_both_packages_is_refused(tmp_path: Path,
                                                 packages: tuple[str, ...]) -> None:
    for name in packages:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    with pytest.raises(SystemExit, match="no (sidecar|kernels) package there"):
        source_tree(tmp_path)
    with pytest.raises(SystemExit), python_path(tmp_path):
        pass
