"""bench/results.py: every results file carries its date, commit and load average."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import results


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
    return tmp_path / "results"


def test_mapping_is_written_as_stamped_json(folder: Path) -> None:
    path = results.write_results("demo", {"p50_ms": 1.5})
    data = json.loads(path.read_text())
    assert path == folder / "demo.json" and data["results"] == {"p50_ms": 1.5}
    assert data["meta"]["commit"] not in ("", "unknown")
    assert data["meta"]["date"].endswith("+00:00") and len(data["meta"]["load_average"]) == 3


def test_recorded_tees_stdout_into_markdown(folder: Path, capsys: pytest.CaptureFixture[str],
                                            ) -> None:
    with results.recorded("printed"):
        print("| size | p50 |")
    text = (folder / "printed.md").read_text()
    assert "| size | p50 |" in capsys.readouterr().out
    assert text.startswith("# printed\n") and "- commit: " in text and "| size | p50 |" in text


def test_nothing_is_written_when_the_bench_fails(folder: Path) -> None:
    with pytest.raises(RuntimeError), results.recorded("broken"):
        raise RuntimeError("bench failed")
    assert not (folder / "broken.md").exists()
