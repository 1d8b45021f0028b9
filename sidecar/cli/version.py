"""``memsidecar --version`` (``sidecar.__version__``, the distribution's version)."""

from __future__ import annotations

import argparse

import sidecar


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="version", version=f"memsidecar {sidecar.__version__}")
