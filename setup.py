"""Build glue: generate the gRPC stubs from proto/ and map them to the `memsidecar` package.

Metadata lives in pyproject.toml. The generated package ``memsidecar.v1`` is written to
``sidecar/_proto/memsidecar`` by ``proto/generate.py`` (pinned grpcio-tools) and mapped
here so ``from memsidecar.v1 import store_pb2`` works in editable and regular installs.
"""

from __future__ import annotations

import runpy
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def generate_stubs() -> None:
    runpy.run_path(str(ROOT / "proto" / "generate.py"))["generate"]()


class BuildWithProto(build_py):
    def run(self) -> None:
        generate_stubs()
        super().run()


if not (ROOT / "sidecar" / "_proto" / "memsidecar").is_dir():
    generate_stubs()  # package_dir below must exist before setuptools looks at it


setup(
    packages=[
        *find_packages(include=["sidecar", "sidecar.*", "kernels", "kernels.*"]),
        "memsidecar",
        "memsidecar.v1",
        "memsidecar_client",
    ],
    package_dir={
        "memsidecar": "sidecar/_proto/memsidecar",
        "memsidecar_client": "clients/python/memsidecar_client",
    },
    package_data={"": ["py.typed", "*.pyi"]},
    cmdclass={"build_py": BuildWithProto},
)
