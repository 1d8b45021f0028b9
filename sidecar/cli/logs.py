"""Log formats of the command line: ``text`` (one line, fields as ``key=value``) and ``json``
(one object per line, fields as their own keys).

Caller strings never reach the log raw: the message and every field value have control
characters escaped (no forged lines) and field values are cut (``sidecar.redact``)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from sidecar.redact import escape, loggable

FORMATS = ("text", "json")
_STANDARD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName"}
_PLAIN = (bool, int, float, type(None))


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """A record's structured fields (``extra=``)."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS}


class FieldsFormatter(logging.Formatter):
    """Appends a record's structured fields as ``key=value`` pairs."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return escape(super().formatMessage(record))

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extra = fields(record)
        if extra:
            text += " " + " ".join(f"{k}={loggable(v)}" for k, v in extra.items())
        return text


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", <fields>..., "exception"?}`` on one line.
    Numbers, booleans and nulls stay JSON values; anything else is a cut, escaped string."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": escape(record.getMessage()),
        }
        for key, value in fields(record).items():
            entry.setdefault(key, value if isinstance(value, _PLAIN) else loggable(value))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure(level: str, fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else
                         FieldsFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])
