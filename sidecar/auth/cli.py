"""``memsidecar token add|list|revoke``: manage the tokens file of a data dir."""

from __future__ import annotations

import argparse
import time

from sidecar.auth.identity import AGENT, OPERATOR
from sidecar.auth.tokens import TokenStore
from sidecar.files import private_dir


def token_command(args: argparse.Namespace) -> int:
    store = TokenStore(private_dir(args.data_dir))
    if args.token_command == "add":
        token, entry = store.add(OPERATOR if args.operator else AGENT, args.agent or "")
        who = "operator" if args.operator else f"agent {entry.agent_id}"
        print(f"token {entry.id} for {who} (shown once; store it now):")
        print(token)
    elif args.token_command == "list":
        for e in store.entries():
            made = time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.created_at))
            print(f"{e.id}  {e.role:8}  {e.agent_id or '-':20}  {made} UTC")
    else:
        gone = store.revoke(args.id)
        print(f"revoked {gone.id} ({gone.role} {gone.agent_id})".rstrip())
    return 0
