"""memsidecar: a gRPC sidecar that injects relevant memories into LLM agent turns."""

import logging

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"
