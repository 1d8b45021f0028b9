"""Waiting for a condition that has no event to wait on (a counter, a file, another process).

``wait_for`` polls until the condition holds, however long a loaded machine takes to get
there: no clock decides the outcome. A condition that never comes fails the test at
pytest-timeout's bound (pyproject.toml), with the stack of the wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable

POLL_S = 0.02


def wait_for(predicate: Callable[[], bool]) -> None:
    while not predicate():
        time.sleep(POLL_S)
