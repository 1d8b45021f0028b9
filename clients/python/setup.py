"""Build glue: generate ``memsidecar.v1`` from the repository's proto/ before packaging.

Metadata lives in pyproject.toml. Install from the repository root with
``pip install ./clients/python`` (``-e`` for an editable install).
"""

from __future__ import annotations

import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
GENERATOR = HERE.parent.parent / "proto" / "generate.py"


def generate_stubs() -> None:
    runpy.run_path(str(GENERATOR))["generate"](HERE)


class BuildWithProto(build_py):
    def run(self) -> None:
        if GENERATOR.is_file():
            generate_stubs()
        super().run()


if not (HERE / "memsidecar" / "v1").is_dir():
    generate_stubs()  # the packages must exist before setuptools looks for them

setup(cmdclass={"build_py": BuildWithProto})
