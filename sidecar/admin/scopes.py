"""A page of scopes for the admin pages: at most ``PAGE_SIZE`` rows, with links to the scopes
before and after, so a store with any number of agents gives pages of a bounded size.

The position travels in the ``scopes`` parameter: ``>ID`` (the scopes after agent ID) or
``<ID`` (the ones before it); none = the first page.
"""

from __future__ import annotations

from sidecar.admin.context import Ctx
from sidecar.admin.html import link
from sidecar.admin.web import url
from sidecar.errors import InvalidArgument
from sidecar.memory.validation import MAX_ID_CHARS
from sidecar.vault.stats import ScopePage

PAGE_SIZE = 50
PARAM = "scopes"


def scope_page(ctx: Ctx, size: int = PAGE_SIZE) -> ScopePage:
    token = ctx.request.arg(PARAM)
    if len(token) > MAX_ID_CHARS + 1 or (token and token[0] not in "<>"):
        raise InvalidArgument("scopes must come from a Next or Previous link of this page",
                              field=PARAM)
    after = token[1:] if token.startswith(">") else None
    before = token[1:] if token.startswith("<") else None
    return ctx.services.vault.scope_page(size, after, before)


def scope_nav(path: str, page: ScopePage, **keep: str) -> str:
    """Previous / Next links of ``page`` on ``path`` (``keep``: the page's other parameters)."""
    links = []
    if page.earlier:
        target = {PARAM: "<" + page.scopes[0].agent_id} if page.scopes else {}
        links.append(link(url(path, **keep, **target), "Previous scopes"))
    if page.later and page.scopes:
        links.append(link(url(path, **keep, **{PARAM: ">" + page.scopes[-1].agent_id}),
                          "Next scopes"))
    return f'<p class="pager">{" · ".join(links)}</p>' if links else ""
