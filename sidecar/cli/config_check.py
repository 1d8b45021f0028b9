"""``memsidecar config check FILE [--listen ADDR] [--http-listen ADDR] [--data-dir DIR]``:
the file validated, then every start-up check ``serve`` makes that needs neither the network
nor the data dir (``sidecar.preflight``), then what only a start can check.

Exit 0 with the effective config per agent on stdout (the checks as ``#`` lines above it);
exit 2 when the file is invalid or serve would refuse it, every check on stderr."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from sidecar.config.loader import load_file
    from sidecar.config.report import render_effective
    from sidecar.config.startup import overridden
    from sidecar.preflight import not_run, run_all
    from sidecar.story import plural

    config = load_file(Path(args.file))  # ConfigError: every bad key, exit 2
    server = overridden(config.server, args.listen, args.data_dir, args.http_listen)
    outcomes = run_all(server, config)
    lines = [f"{'FAILED' if o.error else 'ok':8}{o.name}: {o.error or o.found}"
             for o in outcomes]
    lines += [f"{'not run':8}{what}" for what in not_run(server, config)]
    failed = sum(1 for o in outcomes if o.error)
    if failed:
        print(f"memsidecar config check: {args.file}: serve would refuse to start "
              f"({failed} of {len(outcomes)} start-up checks failed):", file=sys.stderr)
        print("".join(f"  {line}\n" for line in lines), end="", file=sys.stderr)
        return 2
    sections = plural(len(config.agents), "[[agents]] section")
    sys.stdout.write(f"# {args.file}: OK ({sections})\n"
                     + "".join(f"# {line}\n" for line in lines) + render_effective(config))
    return 0
