"""Log formats: `serve --log-format json` writes one JSON object per line with the fields as
keys; caller strings stay escaped and cut in both formats."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from pathlib import Path

from sidecar.cli import FieldsFormatter, JsonFormatter
from sidecar.redact import LOG_CHARS
from tests.test_cli import free_port


def record(message: str, **fields: object) -> logging.LogRecord:
    entry = logging.LogRecord("sidecar.test", logging.WARNING, __file__, 1, message, None, None)
    for key, value in fields.items():
        setattr(entry, key, value)
    return entry


def test_a_json_line_carries_the_fields_as_keys_and_escapes_caller_strings() -> None:
    line = JsonFormatter().format(record("forged\nline", channel="c\n1", count=3, ok=True,
                                         text="x" * 500, ratio=0.5))
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "WARNING" and entry["logger"] == "sidecar.test"
    assert entry["message"] == "forged\\x0aline" and entry["channel"] == "c\\x0a1"
    assert (entry["count"], entry["ok"], entry["ratio"]) == (3, True, 0.5)
    assert entry["text"].startswith("x" * LOG_CHARS + "…(+")
    assert entry["time"].endswith("Z")
    text = FieldsFormatter("%(message)s").format(record("forged\nline", channel="c\n1"))
    assert text == "forged\\x0aline channel=c\\x0a1"


def test_an_exception_is_one_json_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        entry = record("failed")
        entry.exc_info = sys.exc_info()
    line = JsonFormatter().format(entry)
    assert "\n" not in line and "ValueError: boom" in json.loads(line)["exception"]


def test_serve_with_json_logs_writes_only_json_lines(tmp_path: Path) -> None:
    """(A relative --data-dir is named in full in the start line.)"""
    data = tmp_path / "data"
    data.mkdir()
    (data / "memsidecar.toml").write_text('[server.http]\nlisten = ""\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar", "serve", "--listen", f"127.0.0.1:{free_port()}",
         "--data-dir", "data", "--log-format", "json"],
        cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    entries = []
    try:
        for line in proc.stderr:
            entries.append(json.loads(line))
            if entries[-1]["message"] == "serving":
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate()
    entries += [json.loads(line) for line in rest.splitlines()]
    assert proc.returncode == 0
    serving = next(e for e in entries if e["message"] == "serving")
    assert serving["logger"] == "sidecar.api.server" and isinstance(serving["port"], int)
    assert entries[-1]["message"] == "stopped"
    started = next(e for e in entries if e["message"].startswith("memsidecar listening on "))
    assert started["message"].endswith(f" (data in {data.resolve()})")
