"""The ``memsidecar`` command: one module per subcommand (``sidecar.cli.main`` assembles them)."""

from sidecar.cli.logs import FieldsFormatter, JsonFormatter
from sidecar.cli.main import main

__all__ = ["FieldsFormatter", "JsonFormatter", "main"]
