"""Pages of scopes (and of agent names) for the admin pages: at most ``PAGE_SIZE`` rows, with
links to the rows before and after, so a store with any number of agents gives pages of a
bounded size.

The position travels in a parameter (``scopes``, or ``agents`` on /settings): ``>ID`` (the
rows after ID) or ``<ID`` (the ones before it); none = the first page.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from sidecar.admin.context import Ctx
from sidecar.admin.html import link
from sidecar.admin.web import url
from sidecar.errors import InvalidArgument
from sidecar.memory.validation import MAX_ID_CHARS
from sidecar.vault.stats import ScopePage

PAGE_SIZE = 50
PARAM = "scopes"


def position(ctx: Ctx, param: str = PARAM) -> tuple[str | None, str | None]:
    """(after, before) named by the request's ``param``."""
    token = ctx.request.arg(param)
    if len(token) > MAX_ID_CHARS + 1 or (token and token[0] not in "<>"):
        raise InvalidArgument(f"{param} must come from a Next or Previous link of this page",
                              field=param)
    return (token[1:] if token.startswith(">") else None,
            token[1:] if token.startswith("<") else None)


def scope_page(ctx: Ctx, size: int = PAGE_SIZE) -> ScopePage:
    after, before = position(ctx)
    return ctx.services.vault.scope_page(size, after, before)


def scope_nav(path: str, page: ScopePage, **keep: str) -> str:
    """Previous / Next links of ``page`` on ``path`` (``keep``: the page's other parameters)."""
    names = [s.agent_id for s in page.scopes]
    return pager(path, names, page.earlier, page.later, "scopes", PARAM, **keep)


def name_window(names: Sequence[str], after: str | None, before: str | None,
                size: int = PAGE_SIZE) -> tuple[list[str], bool, bool]:
    """(at most ``size`` of the sorted ``names`` after/before a position, earlier, later)."""
    if before is not None:
        end = bisect.bisect_left(names, before)
        start = max(0, end - size)
    else:
        start = bisect.bisect_right(names, after) if after is not None else 0
        end = start + size
    return list(names[start:end]), start > 0, end < len(names)


def pager(path: str, names: Sequence[str], earlier: bool, later: bool, what: str, param: str,
          **keep: str) -> str:
    links = []
    if earlier:
        target = {param: "<" + names[0]} if names else {}
        links.append(link(url(path, **keep, **target), f"Previous {what}"))
    if later and names:
        links.append(link(url(path, **keep, **{param: ">" + names[-1]}), f"Next {what}"))
    return f'<p class="pager">{" · ".join(links)}</p>' if links else ""
