"""Config costs: parsing a file, resolving an agent, and edit -> applied latency of hot reload.

Run: ``.venv/bin/python -m pytest bench/test_config_bench.py -p no:cacheprovider --benchmark-only``
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sidecar.config import ConfigStore, load_text

AGENTS = 20


def typical_file(search_limit: int = 20) -> str:
    parts = [
        '[server]\nlisten = "127.0.0.1:50051"\n',
        "[retrieval]\nrrf_k = 60\nalpha = 0.005\n",
        "[vault]\nmax_chars = 1200\n",
        f"[defaults.memory_injection]\nsearch_limit = {search_limit}\nmax_total = 25\n",
    ]
    for i in range(AGENTS):
        parts.append(f'[[agents]]\nid = "agent-{i}"\n[agents.memory_injection]\n'
                     'pinned_types = ["todo", "goal"]\nambient_enabled = true\n')
    return "\n".join(parts)


def test_parse_and_validate(benchmark: pytest.FixtureRequest) -> None:
    text = typical_file()
    config = benchmark(load_text, text)  # type: ignore[operator]
    assert len(config.agents) == AGENTS


def test_injection_for(benchmark: pytest.FixtureRequest) -> None:
    config = load_text(typical_file())
    assert benchmark(config.injection_for, "agent-7").ambient_enabled  # type: ignore[operator]


def test_hot_reload_latency(benchmark: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Wall time from an atomic file replace to the new value being served (default watcher)."""
    path = tmp_path / "memsidecar.toml"
    path.write_text(typical_file(), encoding="utf-8")
    store = ConfigStore.open(path, required=True)
    store.watch()  # the production interval
    values = iter(range(21, 10_000))

    def edit_until_applied() -> None:
        value = next(values)
        tmp = path.with_suffix(".new")
        tmp.write_text(typical_file(value), encoding="utf-8")
        os.replace(tmp, path)
        while store.injection_for("x").search_limit != value:
            time.sleep(0.005)

    try:
        benchmark.pedantic(edit_until_applied, rounds=12, iterations=1)  # type: ignore[attr-defined]
    finally:
        store.close()
