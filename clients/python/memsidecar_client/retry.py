"""Retries with exponential backoff, for idempotent calls only, on UNAVAILABLE only."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from memsidecar_client.errors import MemsidecarError, UnavailableError

log = logging.getLogger(__name__)
T = TypeVar("T")
OnRetry = Callable[[str, int, MemsidecarError, float], None]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``max_attempts`` counts the first try; sleeps grow from ``initial_backoff_s`` by
    ``multiplier`` up to ``max_backoff_s``, each scaled by a random factor in [1-jitter, 1]."""

    max_attempts: int = 5
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    multiplier: float = 2.0
    jitter: float = 0.2

    def backoff(self, retry: int) -> float:
        """Sleep before retry number ``retry`` (1-based)."""
        growth = self.multiplier ** min(retry - 1, 64)  # no float overflow on long waits
        base = min(self.max_backoff_s, self.initial_backoff_s * growth)
        return base * (1.0 - self.jitter * random.random())


NO_RETRY = RetryPolicy(max_attempts=1)


def call_with_retry(name: str, attempt: Callable[[], T], policy: RetryPolicy,
                    on_retry: OnRetry | None = None) -> T:
    """Run ``attempt`` until it returns, raises something other than UnavailableError, or
    ``policy.max_attempts`` is used up (then the last UnavailableError propagates)."""
    for number in range(1, policy.max_attempts + 1):
        try:
            return attempt()
        except UnavailableError as err:
            if number == policy.max_attempts:
                raise
            sleep = policy.backoff(number)
            log.info("retrying", extra={"rpc": name, "attempt": number, "sleep_s": sleep})
            if on_retry is not None:
                on_retry(name, number, err, sleep)
            time.sleep(sleep)
    raise AssertionError("unreachable")  # the loop returns or raises
