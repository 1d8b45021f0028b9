"""``memsidecar token add|list|revoke``: manage the tokens file of a data dir."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from sidecar.auth.identity import AGENT, OPERATOR
from sidecar.auth.tokens import TokenStore
from sidecar.errors import NotFound
from sidecar.files import private_dir


def token_command(args: argparse.Namespace) -> int:
    """``add`` creates the data dir (0700) when missing; ``list`` and ``revoke`` change no
    directory: a data dir that does not exist is an error naming it."""
    adding = args.token_command == "add"
    store = TokenStore(private_dir(args.data_dir) if adding else _existing(args.data_dir))
    if adding:
        token, entry = store.add(OPERATOR if args.operator else AGENT, args.agent or "")
        print(f"token {entry.id} for {_who(entry.role, entry.agent_id)} (shown once; store it "
              "now):")
        print(token)
    elif args.token_command == "list":
        entries = store.entries()
        if not entries:
            print(f"no tokens in {store.path.resolve()}")
        for e in entries:
            made = time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.created_at))
            print(f"{e.id}  {e.role:8}  {e.agent_id or '-':20}  {made} UTC")
    else:
        gone = store.revoke(args.id)
        print(f"revoked {gone.id} (the token of {_who(gone.role, gone.agent_id)})")
    return 0


def _who(role: str, agent_id: str) -> str:
    """``operator`` or ``agent NAME``: whom a token acts for."""
    return "the operator" if role == OPERATOR else f"agent {agent_id}"


def _existing(data_dir: str) -> Path:
    path = Path(data_dir)
    if not path.is_dir():
        raise NotFound(f"no tokens: {path.resolve()} is not a directory (pass the sidecar's "
                       "--data-dir)")
    return path
