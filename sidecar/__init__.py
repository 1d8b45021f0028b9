"""memsidecar: a gRPC sidecar that injects relevant memories into LLM agent turns."""

import logging
import os

# numpy's BLAS runs one thread unless the operator says otherwise. Set before anything
# imports numpy (this package is imported first by ``memsidecar`` and ``python -m sidecar``):
# the hot path's products are small, and a BLAS that splits one across both cores of a
# small host, while the model or another call holds the second, waits for it, several
# times slower than one thread (docs/decisions/0036).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
# numpy asks the kernel for transparent huge pages on every array of 4 MB or more. The
# indexes reserve their large arrays at start and fill them as scopes load: each first write
# into a new 2 MB region then waits for a huge page to be found (compacting memory) and
# zeroed, 6-10 ms inside whichever call's load wrote it (docs/decisions/0041).
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"
