"""The admin site: routes a Request to its page, behind the session and CSRF checks."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sidecar.admin import home, injections, login, memories, memory, search, settings, vault
from sidecar.admin.context import Ctx, Services
from sidecar.admin.html import e, page
from sidecar.admin.session import Sessions, cookie, csrf_ok, host_ok
from sidecar.admin.web import Request, Response, redirect
from sidecar.errors import DomainError

log = logging.getLogger(__name__)

Page = Callable[[Ctx], Response]

ROUTES: dict[tuple[str, str], Page] = {
    ("GET", "/"): home.show,
    ("GET", "/memories"): memories.show,
    ("GET", "/search"): search.show,
    ("GET", "/memory"): memory.show,
    ("POST", "/memory/forget"): memory.forget,
    ("POST", "/memory/restore"): memory.restore,
    ("GET", "/injections"): injections.show,
    ("GET", "/settings"): settings.show,
    ("POST", "/settings/update"): settings.update,
    ("POST", "/settings/revert"): settings.revert,
    ("GET", "/vault"): vault.show,
    ("POST", "/vault/accept"): vault.accept,
    ("POST", "/vault/dismiss"): vault.dismiss,
}


class AdminSite:
    def __init__(self, services: Services, sessions: Sessions, listen_host: str) -> None:
        self.services = services
        self.sessions = sessions
        self.listen_host = listen_host

    def handle(self, request: Request) -> Response:
        if not self.sessions.auth and not host_ok(request.host, self.listen_host):
            return Response(421, "this admin page answers to its loopback address only\n",
                            "text/plain; charset=utf-8")
        if request.path == "/login":
            return login.handle(request, self.sessions)
        if request.path == "/logout":
            self.sessions.close(request)
            return Response(303, "", headers=[("Location", "/"), cookie(None)])
        route = ROUTES.get((request.method, request.path))
        if route is None:
            return page("Not found", "<p>No such page. <a href='/'>Home</a></p>", status=404)
        session = self.sessions.current(request)
        fresh: tuple[str, str] | None = None
        if session is None:
            if self.sessions.auth:
                return redirect("/login")
            session = self.sessions.open()
            fresh = cookie(session)
        if request.method == "POST" and not csrf_ok(request, session):
            return page("Refused", "<p>This form is stale or came from another site; reload "
                        "the page and try again.</p>", status=403)
        response = self._run(route, Ctx(self.services, request, session))
        if fresh is not None:
            response.headers.append(fresh)
        return response

    def _run(self, route: Page, ctx: Ctx) -> Response:
        try:
            return route(ctx)
        except DomainError as err:
            return page("Cannot do that", f'<p class="err">{e(err.message)}</p>', status=400)
        except Exception:
            log.exception("admin page failed", extra={"path": ctx.request.path})
            return page("Error", "<p>Internal error; see the sidecar log.</p>", status=500)
