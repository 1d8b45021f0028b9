"""Authentication: every call but health checks carries ``authorization: Bearer <token>``.

No token, or one the tokens file does not hold, is UNAUTHENTICATED before any work is done.
A valid token's identity is bound to the call's thread (``sidecar.auth.identity``) for the
request rules (``sidecar.api.authorize``); for a response stream, during each of its steps.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import grpc
from google.protobuf.message import Message

from sidecar.api.authorize import authorize
from sidecar.api.handlers import Behavior, in_steps, is_health, refusal_handler, wrap_handler
from sidecar.api.status import abort_with
from sidecar.auth import identity
from sidecar.auth.identity import Identity
from sidecar.auth.tokens import TokenStore
from sidecar.errors import DomainError

log = logging.getLogger(__name__)

SCHEME = "bearer "


def bearer(metadata: Any) -> str:
    for key, value in metadata or ():
        if key == "authorization" and isinstance(value, str) and value.lower().startswith(SCHEME):
            return value[len(SCHEME):].strip()
    return ""


REFUSAL = ("missing or invalid token: send 'authorization: Bearer <token>' "
           "(memsidecar token add)")


class AuthInterceptor(grpc.ServerInterceptor):
    def __init__(self, tokens: TokenStore, shared_write: str = "operator") -> None:
        self.tokens = tokens
        self.shared_write = shared_write == "any"

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or is_health(details.method):
            return handler
        token = bearer(details.invocation_metadata)
        who = self.tokens.verify(token) if token else None
        if who is None:
            log.info("call refused: no valid token", extra={"method": details.method})
            return refusal_handler(handler, grpc.StatusCode.UNAUTHENTICATED, REFUSAL)
        who = replace(who, write_shared=who.operator or self.shared_write)
        return wrap_handler(handler, lambda behavior: _as(who, behavior))


def _as(who: Identity, behavior: Behavior) -> Behavior:
    def bound(request: Any, context: grpc.ServicerContext) -> Any:
        with _acting(who):
            if isinstance(request, Message):
                try:
                    authorize(request)
                except DomainError as err:
                    abort_with(context, err)
            result = behavior(request, context)
        if isinstance(result, Iterator):  # a response stream: each step runs as ``who``
            return in_steps(result, lambda: _acting(who))
        return result

    return bound


@contextmanager
def _acting(who: Identity) -> Iterator[None]:
    token = identity.bind(who)
    try:
        yield
    finally:
        identity.unbind(token)
