"""pytest-benchmark runs (`make bench`): stamp the JSON (--benchmark-json) like every
other results file (bench/results.py)."""

from __future__ import annotations

from typing import Any

from bench.results import stamp


def pytest_benchmark_update_json(config: Any, benchmarks: Any, output_json: dict[str, Any],
                                 ) -> None:
    output_json["memsidecar"] = stamp()
