"""A request and a response, independent of the HTTP server that carries them."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode


@dataclass(frozen=True, slots=True)
class Request:
    method: str  # GET | POST
    path: str
    query: dict[str, str]  # first value of each parameter
    form: dict[str, str]  # POST body (application/x-www-form-urlencoded)
    cookies: dict[str, str]
    host: str = ""  # the Host header
    origin: str = ""  # the Origin header, when the browser sent one

    def arg(self, name: str, default: str = "") -> str:
        """A parameter of the form (POST) or of the query string (GET)."""
        return self.form.get(name, self.query.get(name, default))


@dataclass(slots=True)
class Response:
    status: int
    body: str
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
    framed: tuple[str, str] | None = None  # (title, nav path): ``body`` is the page's main part


def parse_pairs(text: str) -> dict[str, str]:
    """``a=1&b=2`` -> {"a": "1", "b": "2"} (first value wins; blanks kept)."""
    return {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}


def parse_cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name not in out:
            out[name] = value
    return out


def url(path: str, **params: str | int) -> str:
    """``path?k=v`` with the non-empty parameters, encoded (escape it again in HTML)."""
    kept = {k: v for k, v in params.items() if v not in ("", None)}
    return f"{path}?{urlencode(kept)}" if kept else path


def redirect(location: str) -> Response:
    """303 See Other: after a POST, the browser GETs the page that shows the result."""
    return Response(303, "", headers=[("Location", location)])
