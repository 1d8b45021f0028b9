"""The admin site of an App: its services, sessions and dismissals."""

from __future__ import annotations

from sidecar.admin.context import Services
from sidecar.admin.dismissed import Dismissed
from sidecar.admin.http import Serve, serve_with
from sidecar.admin.session import Sessions
from sidecar.admin.site import AdminSite
from sidecar.admin.suggestions import SuggestionCache
from sidecar.app import App
from sidecar.auth.tokens import TokenStore


def admin_site(app: App, tokens: TokenStore | None) -> Serve:
    services = Services(memories=app.memories, retriever=app.retriever, settings=app.settings,
                        vault=app.vault, injector=app.injector, dismissed=Dismissed(app.db),
                        suggestions=SuggestionCache(app.vault))
    listen_host = app.config.http.listen.rpartition(":")[0]
    return serve_with(AdminSite(services, Sessions(tokens), listen_host))
