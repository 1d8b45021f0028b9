"""The command line parses without its heavy parts: `--help`, argument errors and each
subcommand's parser import no gRPC, numba, onnxruntime or model (a subcommand imports them
when it runs)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from memsidecar_client.importing import MAX_BATCH

from sidecar.cli import importing
from sidecar.cli.main import COMMANDS
from tests.clients.agent_loops import ROOT

HEAVY = ("grpc", "numba", "onnxruntime", "numpy", "apsw", "psycopg", "tqdm")
PROBE = """
import contextlib, io, json, sys
from sidecar.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy})))
"""


def loaded(*argv: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    return list(json.loads(done.stdout))


@pytest.mark.parametrize("argv", [["--help"], [], ["no-such-command"],
                                  *([name, "--help"] for name in COMMANDS),
                                  ["search"], ["inject", "text"], ["serve", "--bad-flag"]])
def test_parsing_imports_nothing_heavy(argv: list[str]) -> None:
    assert loaded(*argv) == []


def test_the_import_batch_limit_is_the_clients() -> None:
    assert importing.MAX_BATCH == MAX_BATCH
