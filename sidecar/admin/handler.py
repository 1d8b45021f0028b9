"""The admin site on the HTTP endpoint's handler: request in, response out, safe headers."""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from sidecar.admin.site import AdminSite
from sidecar.admin.web import Request, Response, parse_cookies, parse_pairs

MAX_FORM_BYTES = 64 * 1024
HEADERS = (
    ("Content-Security-Policy",
     "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
     "frame-ancestors 'none'; base-uri 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),  # "no-referrer" makes the Origin of a POST "null"
    ("Cache-Control", "no-store"),
)

Serve = Callable[[BaseHTTPRequestHandler, str], None]


def serve_with(site: AdminSite) -> Serve:
    """A function answering one request of ``handler`` (GET or POST) from ``site``."""

    def serve(handler: BaseHTTPRequestHandler, method: str) -> None:
        request = _request(handler, method)
        response = Response(413, "form too large\n", "text/plain") if request is None \
            else site.handle(request)
        _write(handler, response)

    return serve


def _request(handler: BaseHTTPRequestHandler, method: str) -> Request | None:
    parts = urlsplit(handler.path)
    form: dict[str, str] = {}
    if method == "POST":
        size = int(handler.headers.get("Content-Length") or 0)
        if size > MAX_FORM_BYTES:
            return None
        form = parse_pairs(handler.rfile.read(size).decode("utf-8", "replace"))
    return Request(method=method, path=parts.path, query=parse_pairs(parts.query), form=form,
                   cookies=parse_cookies(handler.headers.get("Cookie", "")),
                   host=handler.headers.get("Host", ""),
                   origin=handler.headers.get("Origin", ""))


def _write(handler: BaseHTTPRequestHandler, response: Response) -> None:
    body = response.body.encode("utf-8")
    handler.send_response(response.status)
    handler.send_header("Content-Type", response.content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (*HEADERS, *response.headers):
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)
