"""memsidecar: the sidecar and the tools around it.

On this machine: serve, health [--addr] [--timeout], config check|docs, token add|list|revoke,
migrate --from sqlite:PATH|postgres:DSN --to ... [--append].
Against a running sidecar (--addr HOST:PORT|unix:PATH, --token T after the command name):
import FILE.jsonl|-, export [--agent A] [--user U], search TEXT [--user U],
inject --channel C [--user U] TEXT, stats, captured [--agent A] [--channel C] [--user U]
[--forget], forget-user --agent A --user U.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from sidecar.cli import logs, version

# name -> ("module:function" adding the subcommand's arguments to its parser, one-line help).
# Only the module of the command being run is imported: ``memsidecar --help`` and argument
# errors load no model, no numba and no gRPC; each module imports its heavy parts in ``run``.
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("sidecar.cli.serve:add", "run the gRPC sidecar"),
    "health": ("sidecar.cli.health:add", "check a running sidecar's gRPC health (exit 0: "
               "SERVING)"),
    "config": ("sidecar.cli.local:add_config", "config file tools"),
    "token": ("sidecar.cli.local:add_token", "bearer tokens for [server.auth]"),
    "migrate": ("sidecar.cli.migrate:add", "copy a store: sqlite:PATH <-> postgres:DSN"),
    "import": ("sidecar.cli.importing:add", "import memories from a JSON Lines file"),
    "export": ("sidecar.cli.export:add", "write memories as JSON Lines to stdout"),
    "search": ("sidecar.cli.search:add", "search the memories a sidecar holds"),
    "inject": ("sidecar.cli.inject:add", "the context block for a turn, and why"),
    "stats": ("sidecar.cli.stats:add", "the store's counts as plain numbers"),
    "captured": ("sidecar.cli.captured:add", "list or forget the captured turns (source "
                 "\"capture\")"),
    "forget-user": ("sidecar.cli.forget_user:add", "erase an end user's memories and "
                    "channels for good"),
}
SIGPIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for `... | head`
# Errors a command reports in one line (exit 2): (module, class), matched only when loaded.
EXPECTED = (("sidecar.errors", "DomainError"), ("memsidecar_client.errors", "MemsidecarError"))


def _parser(chosen: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memsidecar", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    version.add(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (spec, help) in COMMANDS.items():  # noqa: A001
        command = sub.add_parser(name, help=help, description=help)
        if name == chosen:
            module, _, function = spec.partition(":")
            getattr(importlib.import_module(module), function)(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = _parser(chosen).parse_args(argv)
    logs.configure(args.log_level, getattr(args, "log_format", "text"))
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return SIGPIPE_STATUS
    except KeyboardInterrupt:
        print(f"memsidecar {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if not (isinstance(err, OSError) or _expected(err)):
            raise
        print(f"memsidecar {args.command}: {getattr(err, 'message', err)}", file=sys.stderr)
        return 2


def _expected(err: Exception) -> bool:
    for module, name in EXPECTED:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(err, cls):
            return True
    return False


def _quiet_stdout() -> None:
    """The reader went away: later writes (and the flush at exit) go nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
