"""Tools on local files: ``memsidecar config check FILE``, ``memsidecar config docs``,
``memsidecar token add|list|revoke --data-dir DIR``."""

from __future__ import annotations

import argparse

from sidecar.api.server_config import DEFAULT_DATA_DIR
from sidecar.cli.args import add_log_level


def add_config(config: argparse.ArgumentParser) -> None:
    config_sub = config.add_subparsers(dest="config_command", required=True)
    checker = config_sub.add_parser(
        "check", help="validate FILE and run every start-up check that needs neither the "
        "network nor the data dir; print the effective config")
    checker.add_argument("file")
    checker.add_argument("--listen", help="check as serve --listen ADDR would start")
    checker.add_argument("--http-listen", metavar="HOST:PORT",
                         help="check as serve --http-listen would start ('' = off)")
    checker.add_argument("--data-dir", help="as serve --data-dir")
    add_log_level(checker)
    documenter = config_sub.add_parser(
        "docs", help="print the configuration reference (Markdown, docs/configuration.md)")
    add_log_level(documenter)
    config.set_defaults(run=_config)


def _config(args: argparse.Namespace) -> int:
    if args.config_command == "check":
        from sidecar.cli import config_check

        return config_check.run(args)
    from sidecar.config.startup import docs

    return docs()


def add_token(token: argparse.ArgumentParser) -> None:
    token_sub = token.add_subparsers(dest="token_command", required=True)
    add = token_sub.add_parser("add", help="create a token; prints it once, on the last line")
    who = add.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", help="the agent the token acts for")
    who.add_argument("--operator", action="store_true", help="a token for every agent")
    listing = token_sub.add_parser("list", help="token ids, roles and agents (never tokens)")
    revoke = token_sub.add_parser("revoke", help="delete a token by id")
    revoke.add_argument("id")
    for command in (add, listing, revoke):
        command.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
        add_log_level(command)
    token.set_defaults(run=_token)


def _token(args: argparse.Namespace) -> int:
    from sidecar.auth.cli import token_command

    return token_command(args)
