"""/vault: counts, then one scope's consolidation candidates and deletion proposals, each
accepted (the weaker memory, or the proposed one, is forgotten) or dismissed explicitly.
Nothing here acts on its own."""

from __future__ import annotations

import time

from sidecar.admin.context import Ctx
from sidecar.admin.dismissed import deletion_key, pair_key
from sidecar.admin.html import button_form, e, ident, link, notice, page, table
from sidecar.admin.pages.memory_page import ADMIN_SOURCE
from sidecar.admin.scopes import PARAM, scope_nav, scope_page
from sidecar.admin.web import Response, redirect, url
from sidecar.errors import InvalidArgument, NotFound
from sidecar.redact import echo
from sidecar.vault.hygiene import DeletionCandidate, SimilarPair, weaker

PROPOSALS_SHOWN = 100
USERS_SHOWN = 20


def show(ctx: Ctx) -> Response:
    scope = ctx.request.arg("scope")
    stats = ctx.services.vault.totals()
    shown = scope_page(ctx)
    position = ctx.request.arg(PARAM)
    scopes = " · ".join(link(url("/vault", scope=s.agent_id, scopes=position),
                             s.agent_id or "(shared)") for s in shown.scopes)
    counts = table(("Scope", "Live", "Forgotten", "Canon", "Registers", "End users",
                    "Their memories"),
                   ([ident(s.agent_id or "(shared)"), str(s.live), str(s.forgotten), str(s.canon),
                     str(s.registers), str(s.users), str(s.user_memories)]
                    for s in shown.scopes),
                   "The store is empty." if not stats.scopes else "No scopes on this page.")
    counts += scope_nav("/vault", shown, scope=scope)
    summary = (f"<p>{stats.live} live, {stats.forgotten} forgotten, {stats.scopes} scopes, "
               f"{stats.history_rows} history rows, database "
               f"{stats.db_size_bytes / 1e6:.1f} MB.</p>")
    dismissed = ctx.services.dismissed.keys()
    found = ctx.services.suggestions.get(scope, fresh=ctx.request.arg("fresh") == "1")
    pairs = [p for p in found.pairs if pair_key(p.first.id, p.second.id) not in dismissed]
    proposals = [c for c in found.proposals
                 if deletion_key(c.memory.id, c.reason) not in dismissed]
    age = time.monotonic() - found.computed
    body = (notice(ctx.request.arg("done")) + summary + counts
            + f"<h2>Scope: {ident(scope or '(shared)')}</h2><p>Scopes: {scopes or 'none'}</p>"
            + _users(ctx, scope)
            + f'<p class="muted">Suggestions computed {age:.0f} s ago. '
            + link(url("/vault", scope=scope, fresh=1), "Recompute") + "</p>"
            + '<section id="pairs"><h3>Consolidation candidates</h3>'
            + table(("Older", "Newer", "Cosine", "Decide"), (_pair(ctx, scope, p) for p in pairs),
                    "No near-duplicate pairs.")
            + '</section><section id="proposals"><h3>Deletion proposals</h3>'
            + table(("Memory", "Reason", "Detail", "Decide"),
                    (_proposal(ctx, scope, c) for c in proposals[:PROPOSALS_SHOWN]),
                    "Nothing proposed.")
            + (f'<p class="muted">{len(proposals) - PROPOSALS_SHOWN} more not shown: decide '
               "on these, then recompute.</p>" if len(proposals) > PROPOSALS_SHOWN else "")
            + "</section>")
    return page("Vault", body, here="/vault")


def _users(ctx: Ctx, scope: str) -> str:
    """The scope's end users with the most live memories (at most USERS_SHOWN)."""
    if not scope:
        return ""
    users = ctx.services.vault.user_counts(scope, USERS_SHOWN)
    return ('<section id="users"><h3>End users with the most memories</h3>'
            + table(("User", "Live memories", "Captured"),
                    ([ident(user), str(live), str(captured)] for user, live, captured in users),
                    "No memory of this agent belongs to an end user.") + "</section>")


def accept(ctx: Ctx) -> Response:
    """Forget the memory named by ``forget`` (the weaker of a pair, or a proposal's)."""
    memory_id = ctx.request.arg("forget")
    found = ctx.services.memories.memories.get(memory_id) if memory_id else None
    if found is None:
        raise NotFound(f"no memory with id {echo(memory_id)}", field="forget")
    ctx.services.memories.forget(found.id, ADMIN_SOURCE, found.agent_id)
    ctx.services.suggestions.drop(ctx.request.arg("scope"))
    return redirect(url("/vault", scope=ctx.request.arg("scope"),
                        done=f"Forgot {found.id}."))


def dismiss(ctx: Ctx) -> Response:
    key = ctx.request.arg("key")
    if not key.startswith(("pair:", "delete:")) or len(key) > 600:
        raise InvalidArgument("key must name a suggestion of this page", field="key")
    ctx.services.dismissed.add(key)
    return redirect(url("/vault", scope=ctx.request.arg("scope"), done="Dismissed."))


def _pair(ctx: Ctx, scope: str, pair: SimilarPair) -> list[str]:
    drop, keep = weaker(pair.first, pair.second)  # the rule of the deletion proposals
    decide = (button_form("/vault/accept", "Accept: forget the weaker", ctx.csrf,
                          forget=drop.id, scope=scope) + " "
              + button_form("/vault/dismiss", "Dismiss", ctx.csrf,
                            key=pair_key(pair.first.id, pair.second.id), scope=scope))
    return [link(url("/memory", id=pair.first.id), pair.first.content, free_text=True),
            link(url("/memory", id=pair.second.id), pair.second.content, free_text=True),
            f"{pair.cosine:.3f}", decide + f'<br><span class="muted">keeps {ident(keep.id)}</span>']


def _proposal(ctx: Ctx, scope: str, c: DeletionCandidate) -> list[str]:
    decide = (button_form("/vault/accept", "Accept: forget it", ctx.csrf, forget=c.memory.id,
                          scope=scope) + " "
              + button_form("/vault/dismiss", "Dismiss", ctx.csrf,
                            key=deletion_key(c.memory.id, c.reason), scope=scope))
    return [link(url("/memory", id=c.memory.id), c.memory.content, free_text=True), e(c.reason),
            e(c.detail),
            decide]
