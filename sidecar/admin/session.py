"""Browser sessions of the admin page: login with the operator token, cookie, CSRF token.

A session is a random id in an HttpOnly, SameSite=Strict cookie, mapped in memory to its CSRF
token and expiry; the operator token itself is never put in a cookie. With authentication off
every visitor gets a session on first sight (it carries the CSRF token); with it on, only a
successful login creates one. A POST must carry its session's CSRF token in the form and, when
the browser sends an Origin, come from the page's own origin. Sessions end at logout, after
``SESSION_S``, or at a restart.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from sidecar.admin.web import Request
from sidecar.auth.tokens import TokenStore

COOKIE = "memsidecar_admin"
SESSION_S = 12 * 3600
MAX_SESSIONS = 1000


@dataclass(frozen=True, slots=True)
class Session:
    sid: str
    csrf: str
    expires: float


class Sessions:
    def __init__(self, tokens: TokenStore | None) -> None:
        self.tokens = tokens  # None: authentication off
        self._lock = threading.Lock()
        self._live: OrderedDict[str, Session] = OrderedDict()

    @property
    def auth(self) -> bool:
        return self.tokens is not None

    def current(self, request: Request) -> Session | None:
        sid = request.cookies.get(COOKIE, "")
        with self._lock:
            found = self._live.get(sid)
            if found is not None and found.expires < time.monotonic():
                del self._live[sid]
                found = None
        return found

    def login(self, token: str) -> Session | None:
        """A new session for the operator token; None for any other token."""
        if self.tokens is None:
            return self.open()
        who = self.tokens.verify(token.strip()) if token.strip() else None
        return self.open() if who is not None and who.operator else None

    def open(self) -> Session:
        session = Session(secrets.token_urlsafe(24), secrets.token_urlsafe(24),
                          time.monotonic() + SESSION_S)
        with self._lock:
            self._live[session.sid] = session
            while len(self._live) > MAX_SESSIONS:
                self._live.popitem(last=False)
        return session

    def close(self, request: Request) -> None:
        with self._lock:
            self._live.pop(request.cookies.get(COOKIE, ""), None)


def cookie(session: Session | None) -> tuple[str, str]:
    """The Set-Cookie header of a session (None: clears it)."""
    if session is None:
        return ("Set-Cookie", f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
    return ("Set-Cookie", f"{COOKIE}={session.sid}; Path=/; Max-Age={SESSION_S}; HttpOnly; "
                          "SameSite=Strict")


def csrf_ok(request: Request, session: Session) -> bool:
    """The form's token is the session's, and the Origin (if sent) is this page's own."""
    if request.origin and request.origin not in (f"http://{request.host}",
                                                 f"https://{request.host}"):
        return False
    return hmac.compare_digest(request.form.get("csrf", ""), session.csrf)


def host_ok(host: str, listen_host: str) -> bool:
    """The Host header names this server (a loopback name or the listen host): a page loaded
    from another site through a rebound DNS name is refused."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.strip("[]").lower()
    return name in {"127.0.0.1", "localhost", "::1", listen_host.strip("[]").lower()}
