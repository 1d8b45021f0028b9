"""The admin site on the HTTP endpoint's handler: request in, response out, safe headers.

The endpoint has checked the request's size and read its body (``sidecar.metrics.bounded``).
"""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from sidecar.admin.site import AdminSite
from sidecar.admin.web import Request, Response, parse_cookies, parse_pairs

HEADERS = (
    ("Content-Security-Policy",
     "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
     "frame-ancestors 'none'; base-uri 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),  # "no-referrer" makes the Origin of a POST "null"
    ("Cache-Control", "no-store"),
)

Serve = Callable[[BaseHTTPRequestHandler, str, bytes], None]


def serve_with(site: AdminSite) -> Serve:
    """A function answering one request of ``handler`` (GET or POST, with its body) from
    ``site``."""

    def serve(handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        _write(handler, site.handle(_request(handler, method, body)))

    return serve


def _request(handler: BaseHTTPRequestHandler, method: str, body: bytes) -> Request:
    parts = urlsplit(handler.path)
    form = parse_pairs(body.decode("utf-8", "replace")) if method == "POST" else {}
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
