"""/login: the operator token in a form; a session cookie on success."""

from __future__ import annotations

from sidecar.admin.html import notice, page
from sidecar.admin.session import Sessions, cookie
from sidecar.admin.web import Request, Response

FORM = """<form method="post" action="/login"><p><label>Operator token
<input type="password" name="token" autocomplete="current-password" autofocus></label>
<button>Log in</button></p></form>
<p class="muted">The operator token comes from <code>memsidecar token add --operator</code>.</p>"""


def handle(request: Request, sessions: Sessions) -> Response:
    if request.method != "POST":
        return page("Log in", FORM, here="")
    session = sessions.login(request.form.get("token", ""))
    if session is None:
        return page("Log in", notice("That is not an operator token.", error=True) + FORM,
                    here="", status=401)
    return Response(303, "", headers=[("Location", "/"), cookie(session)])
