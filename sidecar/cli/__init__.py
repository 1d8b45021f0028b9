"""The ``memsidecar`` command: one module per subcommand, registered in ``sidecar.cli.main``
and imported only when that subcommand runs."""

from sidecar.cli.logs import FieldsFormatter, JsonFormatter
from sidecar.cli.main import main

__all__ = ["FieldsFormatter", "JsonFormatter", "main"]
