"""Browser sessions of the admin page: login with the operator token, cookie, CSRF check.

With authentication on, a successful login creates a session: a random id in an HttpOnly,
SameSite=Strict cookie, mapped in memory to its expiry; the operator token itself is never put
in a cookie. With it off there are no sessions at all: a visit leaves nothing on the server.
Every form carries a stateless CSRF token (``sidecar.admin.csrf``; bound to the session when
there is one), and a POST must carry a valid one and, when the browser sends an Origin, come
from the page's own origin. Sessions end at logout, after ``SESSION_S``, or at a restart.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from sidecar.admin.csrf import Csrf
from sidecar.admin.web import Request
from sidecar.auth.tokens import TokenStore

COOKIE = "memsidecar_admin"
SESSION_S = 12 * 3600
MAX_SESSIONS = 1000  # operator logins kept; the oldest goes first


@dataclass(frozen=True, slots=True)
class Session:
    sid: str
    expires: float


class Sessions:
    def __init__(self, tokens: TokenStore | None, csrf: Csrf) -> None:
        self.tokens = tokens  # None: authentication off
        self.csrf = csrf
        self._lock = threading.Lock()
        self._live: OrderedDict[str, Session] = OrderedDict()  # in expiry order

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
        """A new session for the operator token; None for any other token (and with
        authentication off, where there are no sessions)."""
        if self.tokens is None or not token.strip():
            return None
        who = self.tokens.verify(token.strip())
        return self._open() if who is not None and who.operator else None

    def _open(self) -> Session:
        now = time.monotonic()
        session = Session(secrets.token_urlsafe(24), now + SESSION_S)
        with self._lock:
            while self._live and next(iter(self._live.values())).expires < now:
                self._live.popitem(last=False)
            self._live[session.sid] = session
            while len(self._live) > MAX_SESSIONS:
                self._live.popitem(last=False)
        return session

    def close(self, request: Request) -> None:
        with self._lock:
            self._live.pop(request.cookies.get(COOKIE, ""), None)

    def token(self, session: Session | None) -> str:
        """A CSRF token for the forms of a page shown to ``session``."""
        return self.csrf.issue(session.sid if session else "")

    def form_ok(self, request: Request, session: Session | None) -> bool:
        """The form's CSRF token is valid for ``session``, and the Origin (if sent) is this
        page's own."""
        if request.origin and request.origin not in (f"http://{request.host}",
                                                     f"https://{request.host}"):
            return False
        return self.csrf.check(request.form.get("csrf", ""), session.sid if session else "")


def cookie(session: Session | None) -> tuple[str, str]:
    """The Set-Cookie header of a session (None: clears it)."""
    if session is None:
        return ("Set-Cookie", f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
    return ("Set-Cookie", f"{COOKIE}={session.sid}; Path=/; Max-Age={SESSION_S}; HttpOnly; "
                          "SameSite=Strict")


def host_ok(host: str, listen_host: str) -> bool:
    """The Host header names this server (a loopback name or the listen host): a page loaded
    from another site through a rebound DNS name is refused."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.strip("[]").lower()
    return name in {"127.0.0.1", "localhost", "::1", listen_host.strip("[]").lower()}
