"""bench/inject_vs_embedding.py, run tiny: real ``memsidecar serve`` processes (this tree's
and a baseline tree's, here this tree again) over a store of the golden texts, two
conversations of three turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import inject_vs_embedding as bench
from bench import lme_data, results
from bench.lme_data import Turn

GOLDEN = Path(__file__).parent.parent / "embedding" / "golden" / "texts.json"


def test_a_tiny_run_writes_every_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lme_data, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
    texts = [t for t in json.loads(GOLDEN.read_text(encoding="utf-8")) if len(t) > 40]
    stored = [Turn(f"s{i % 4}#{i}", f"s{i % 4}", "user", t, False)
              for i, t in enumerate(texts)]
    talks = {f"s{k}": [(t.content, "Noted.") for t in stored if t.session_id == f"s{k}"]
             for k in range(4)}
    out = bench.run(stored, talks, (8,), 2, 3, baseline=results.ROOT)
    rows = out["rows"]
    assert isinstance(rows, dict)
    assert set(rows) == {f"{tree}, 8 tokens, {kind}" for tree in ("baseline", "this tree")
                         for kind in ("all turns", "follow-ups")}
    assert rows["baseline, 8 tokens, all turns"]["n"] == 6
    assert rows["this tree, 8 tokens, follow-ups"]["n"] == 4
    every = rows["this tree, 8 tokens, all turns"]
    assert every["inject_ms"][0] > 0 and every["bare_ms"][0] > 0 and every["ratio_p50"] > 0
    assert set(every["stages_ms"]) == set(bench.STAGES)
    assert every["stages_ms"]["embed"][0] > 0 and every["stages_ms"]["persist"][0] > 0
    assert every["floor_ms"][0] > 0 and every["floor_ratio_p50"] > 1
    assert 'capture = "user"' in str(out["config"])
    cpu = out["server_cpu_ms_a_turn"]
    assert isinstance(cpu, dict) and set(cpu) == {"baseline", "this tree"}
    assert all(ms > 0 for ms in cpu.values())  # each server's own process, read from /proc


def test_conversations_cut_each_text_and_skip_short_ones() -> None:
    talks = {"a": [("one two three four five six", "r1"), ("seven eight nine ten", "r2")],
             "b": [("too short", "r")] * 2}
    [talk] = bench.conversations(talks, 3, 2, 5)
    assert talk == [("one two three", "r1"), ("seven eight nine", "r2")]
