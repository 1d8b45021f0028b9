"""setuptools entry for tools that call ``setup.py``: the metadata, packages and build steps
are in pyproject.toml; its ``bdist_wheel`` (which builds the default model into the wheel)
lives in build_support/, put on the path here as the PEP 517 backend's ``backend-path``
does."""

import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "build_support"))
setup()
