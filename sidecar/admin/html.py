"""HTML building: every value from the store or the request goes through ``e`` (escaped).

Stored memories are hostile text: nothing here emits a value unescaped. A caller's string
shown as text also goes through ``ident`` (ids and names) or ``prose`` (memory content,
queries): each sits in a ``<bdi>`` of its own, and the characters that reorder text (bidi
overrides, embeddings, isolates, marks) show as escapes such as ``\u202e``, so no string can
reverse or move the text around it. Attribute values (form fields, links) keep the exact
value through ``e``. Pages return ``Response`` objects built with ``page``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from sidecar.admin.web import Response
from sidecar.redact import escape

NAV = (("/", "Home"), ("/memories", "Memories"), ("/search", "Search"),
       ("/injections", "Injections"), ("/settings", "Settings"), ("/vault", "Vault"))

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;padding:.6em 1.2em}header a{color:#e8ecf3;margin-right:1.2em;
text-decoration:none}header a.here{font-weight:700;border-bottom:2px solid #7fb0ff}
header .instance{color:#aab3c2;font-size:12px;margin-top:.3em}header .instance b{color:#e8ecf3;
font-weight:600}details>summary{cursor:pointer;color:#3a5fa0;margin:.3em 0}
main{padding:1em 1.4em;max-width:78em}table{border-collapse:collapse;width:100%;
background:#fff;margin:.6em 0}th,td{border:1px solid #dde1e8;padding:.3em .5em;
text-align:left;vertical-align:top}th{background:#eef1f5}.num{text-align:right}
.muted{color:#6b7382}.err{background:#fde8e8;border:1px solid #e0a0a0;padding:.5em}
.ok{background:#e6f6ea;border:1px solid #9fd0ab;padding:.5em}form.inline{display:inline}
.tag{display:inline-block;padding:0 .4em;border-radius:3px;background:#eef1f5}
.over{font-weight:700;color:#9a4b00}.turn{background:#fff;border:1px solid #dde1e8;
padding:.5em .8em;margin:.8em 0}input[type=text],select{padding:.2em}
details.turn{padding:.2em .8em;margin:.4em 0}details.turn>summary{margin:0;color:inherit;
white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
"""


def e(value: object) -> str:
    """The value as escaped HTML text (quotes too: safe inside attributes)."""
    return html.escape(str(value), quote=True)


# What prose shows as escapes: the bidi formatting characters (ALM, LRM, RLM, the embeddings
# and overrides U+202A-202E, the isolates U+2066-2069, the deprecated U+206A-206F) and the line
# and paragraph separators. Joiners and soft hyphens stay: words of some scripts need them.
_REORDERING = re.compile("[\u061c\u200e\u200f\u2028-\u202e\u2066-\u206f]")


def _code(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def visible(value: object) -> str:
    """``value`` with the characters that reorder text as escapes (``\\u202e``); not HTML."""
    return _REORDERING.sub(_code, str(value))


def ident(value: object) -> str:
    """An id or a name as text: escaped as the logs show it (every invisible or format
    character as ``\\uNNNN``: two ids that differ show apart) and isolated in a ``<bdi>``."""
    return f"<bdi>{_ident(value)}</bdi>"


def prose(value: object) -> str:
    """Free text (memory content, a query) as text: the reordering characters as escapes,
    isolated in a ``<bdi>``; the rest as written."""
    return f"<bdi>{_prose(value)}</bdi>"


def link(href: str, text: object, free_text: bool = False) -> str:
    """A link to ``href`` (its exact value) showing ``text`` as ``ident`` does (as ``prose``
    with ``free_text``), the link isolated in a ``<bdi>``."""
    shown = _prose(text) if free_text else _ident(text)
    return f'<bdi><a href="{e(href)}">{shown}</a></bdi>'


def _ident(value: object) -> str:
    return e(escape(str(value)))


def _prose(value: object) -> str:
    return e(visible(value))


def when(us: int) -> str:
    if not us:
        return "-"
    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def table(head: Sequence[str], rows: Iterable[Sequence[str]], empty: str = "none") -> str:
    """A table; ``rows`` cells are HTML already (escape values with ``e``)."""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="muted">{e(empty)}</p>'
    heads = "".join(f"<th>{e(h)}</th>" for h in head)
    return f"<table><tr>{heads}</tr>{body}</table>"


def hidden(**fields: object) -> str:
    return "".join(f'<input type="hidden" name="{e(k)}" value="{e(v)}">'
                   for k, v in fields.items())


def button_form(action: str, label: str, csrf: str, **fields: object) -> str:
    """A POST form of one button (an action that changes something)."""
    return (f'<form class="inline" method="post" action="{e(action)}">'
            f"{hidden(csrf=csrf, **fields)}<button>{e(label)}</button></form>")


def select(name: str, options: Sequence[str], chosen: str, blank: str | None = "any") -> str:
    """A drop-down of ``options``; ``blank`` labels an empty first choice (None: none)."""
    opts = [] if blank is None else [
        f'<option value=""{" selected" if not chosen else ""}>{e(blank)}</option>']
    opts += [f'<option value="{e(o)}"{" selected" if o == chosen else ""}>{e(o)}</option>'
             for o in options]
    return f'<select name="{e(name)}">{"".join(opts)}</select>'


def notice(text: str, error: bool = False) -> str:
    return f'<p class="{"err" if error else "ok"}">{prose(text)}</p>' if text else ""


def page(title: str, body: str, here: str = "/", status: int = 200) -> Response:
    """A page's main part; the site frames it (``frame``) with the header of its instance.
    ``title`` is plain text (a caller's name in it shows its invisible characters as
    escapes)."""
    return Response(status, body, framed=(title, here))


def frame(response: Response, instance: str, auth: bool) -> Response:
    """The whole document of a ``page``: navigation, the instance line (HTML already), and
    "Log out" only when there is a login."""
    if response.framed is None:
        return response
    title, here = response.framed
    nav = "".join(f'<a href="{href}"{" class=here" if href == here else ""}>{e(label)}</a>'
                  for href, label in NAV)
    if auth:
        nav += '<a href="/logout">Log out</a>'
    response.body = (
        f"<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<meta name=viewport content='width=device-width'>"
        f"<title>{e(escape(title))} · memsidecar</title><style>{STYLE}</style></head>"
        f'<body><header><nav>{nav}</nav><div class="instance" id="instance">{instance}</div>'
        f"</header><main><h1>{e(escape(title))}</h1>{response.body}</main></body></html>")
    response.framed = None
    return response
