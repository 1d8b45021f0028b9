"""Argument types with ranges: a value out of range ends in the usage line and exit 2, never
in a traceback from the layer that would have refused it later (protobuf, gRPC, logging)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MAX_SECONDS = 86_400.0  # the longest --timeout: a day
UINT64_MAX = 2**64 - 1


def integer(low: int, high: int) -> Callable[[str], int]:
    """An ``int`` in ``low..high`` (both included)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not in {low}..{high}")
        return value

    return parse


def seconds(text: str) -> float:
    """A finite number of seconds above 0, at most ``MAX_SECONDS``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(
            f"{text} is not a number of seconds above 0 and at most {MAX_SECONDS:g}")
    return value


def level(text: str) -> str:
    """A logging level name, any case."""
    if text.upper() not in LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LEVELS)}")
    return text.upper()


def add_log_level(parser: argparse.ArgumentParser, default: str = "WARNING") -> None:
    parser.add_argument("--log-level", type=level, default=default,
                        help=f"{', '.join(LEVELS)} (default {default})")


def add_timeout(parser: argparse.ArgumentParser, default: float, what: str) -> None:
    parser.add_argument("--timeout", type=seconds, default=default,
                        help=f"seconds {what} (default {default:g}, at most {MAX_SECONDS:g})")
