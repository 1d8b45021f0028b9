"""The admin site of an App: its services, sessions and dismissals."""

from __future__ import annotations

import logging
from pathlib import Path

from sidecar import __version__
from sidecar.admin.context import Services
from sidecar.admin.csrf import Csrf, data_dir_key
from sidecar.admin.dismissed import Dismissed
from sidecar.admin.handler import Serve, serve_with
from sidecar.admin.instance import Instance
from sidecar.admin.session import Sessions
from sidecar.admin.site import AdminSite
from sidecar.admin.suggestions import SuggestionCache
from sidecar.api.exposure import is_local
from sidecar.app import App
from sidecar.auth.tokens import TokenStore

log = logging.getLogger(__name__)


def admin_site(app: App, tokens: TokenStore | None, grpc_listen: str) -> Serve | None:
    """The page's request handler; None when it is off (or the HTTP endpoint is), or when it
    would be reachable from other hosts without authentication (the rule of the gRPC listen
    address)."""
    config = app.config
    listen = config.http.listen
    if not (config.http.admin and listen):
        return None
    if tokens is None and not is_local(listen) and not config.auth.allow_insecure_remote:
        log.warning("admin page off: [server.http] listen %s is not a loopback address and "
                    "[server.auth] is off; turn auth on, listen on 127.0.0.1, or set "
                    "[server.http] admin = false", listen, extra={"key": "server.http.admin"})
        return None
    services = Services(memories=app.memories, retriever=app.retriever, settings=app.settings,
                        vault=app.vault, injector=app.injector, dismissed=Dismissed(app.db),
                        suggestions=SuggestionCache(app.vault))
    instance = Instance(data_dir=str(Path(config.data_dir).resolve()), grpc_listen=grpc_listen,
                        version=__version__, model=app.settings.current.embedding.model,
                        auth=tokens is not None)
    sessions = Sessions(tokens, Csrf(data_dir_key(Path(config.data_dir))))
    return serve_with(AdminSite(services, sessions, listen.rpartition(":")[0], instance,
                                app.metrics.count_admin))
