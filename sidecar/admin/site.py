"""The admin site: routes a Request to its page, behind the session and CSRF checks."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sidecar.admin.context import Ctx, Services
from sidecar.admin.html import frame, page, prose
from sidecar.admin.instance import Instance
from sidecar.admin.pages import (
    home_page,
    injections_page,
    login_page,
    memories_page,
    memory_page,
    search_page,
    settings_page,
    vault_page,
)
from sidecar.admin.session import Sessions, cookie, host_ok
from sidecar.admin.web import Request, Response, redirect
from sidecar.errors import DomainError

log = logging.getLogger(__name__)

Page = Callable[[Ctx], Response]
Count = Callable[[str, int], None]  # (route path or "other", HTTP status): a page view

ROUTES: dict[tuple[str, str], Page] = {
    ("GET", "/"): home_page.show,
    ("GET", "/memories"): memories_page.show,
    ("GET", "/search"): search_page.show,
    ("GET", "/memory"): memory_page.show,
    ("POST", "/memory/forget"): memory_page.forget,
    ("POST", "/memory/restore"): memory_page.restore,
    ("GET", "/injections"): injections_page.show,
    ("GET", "/settings"): settings_page.show,
    ("POST", "/settings/update"): settings_page.update,
    ("POST", "/settings/revert"): settings_page.revert,
    ("GET", "/vault"): vault_page.show,
    ("POST", "/vault/accept"): vault_page.accept,
    ("POST", "/vault/dismiss"): vault_page.dismiss,
}
PATHS = frozenset({path for _, path in ROUTES} | {"/login", "/logout"})  # the counter's labels


class AdminSite:
    def __init__(self, services: Services, sessions: Sessions, listen_host: str,
                 instance: Instance, count: Count = lambda path, status: None) -> None:
        self.services = services
        self.sessions = sessions
        self.listen_host = listen_host
        self.instance = instance.html()
        self.count = count

    def handle(self, request: Request) -> Response:
        response = frame(self._route(request), self.instance, self.sessions.auth)
        self.count(request.path if request.path in PATHS else "other", response.status)
        return response

    def _route(self, request: Request) -> Response:
        if not self.sessions.auth and not host_ok(request.host, self.listen_host):
            return Response(421, "this admin page answers to its loopback address only\n",
                            "text/plain; charset=utf-8")
        if request.path in ("/login", "/logout") and not self.sessions.auth:
            return redirect("/")  # no login without authentication: no session to open
        if request.path == "/login":
            return login_page.handle(request, self.sessions)
        if request.path == "/logout":
            self.sessions.close(request)
            return Response(303, "", headers=[("Location", "/"), cookie(None)])
        route = ROUTES.get((request.method, request.path))
        if route is None:
            return page("Not found", "<p>No such page. <a href='/'>Home</a></p>", status=404)
        session = self.sessions.current(request)
        if session is None and self.sessions.auth:
            return redirect("/login")
        if request.method == "POST" and not self.sessions.form_ok(request, session):
            return page("Refused", "<p>This form is stale or came from another site; reload "
                        "the page and try again.</p>", status=403)
        return self._run(route, Ctx(self.services, request, self.sessions.token(session)))

    def _run(self, route: Page, ctx: Ctx) -> Response:
        try:
            return route(ctx)
        except DomainError as err:
            return page("Cannot do that", f'<p class="err">{prose(err.message)}</p>', status=400)
        except Exception:
            log.exception("admin page failed", extra={"path": ctx.request.path})
            return page("Error", "<p>Internal error; see the sidecar log.</p>", status=500)
