"""Limits on every request field, checked at the edge before any domain call.

One walk over a request: every name-like string field (ids, ``agent_id``, ``channel_id``,
``source``, ``topic_id``, ...) at any depth of singular sub-messages is at most
``MAX_NAME_CHARS`` characters with no control character (Unicode Cc, Zl, Zp) and no secret or
personal identifier (``sidecar.vault.pii``: names are logged and kept in histories, whatever
``[vault] pii_gate`` says); capped free-text fields have their own limits, and repeated fields
their counts (``REPEATED_CAPS``). A failure is INVALID_ARGUMENT (FAILED_PRECONDITION
``PII_DETECTED`` for PII) naming the field; the value is never echoed whole
(``sidecar.redact.echo``).
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from sidecar.errors import FailedPrecondition, InvalidArgument
from sidecar.redact import echo, has_control
from sidecar.vault import reasons
from sidecar.vault.pii import find_pii_in_name

MAX_NAME_CHARS = 256
MAX_PAGE_TOKEN_CHARS = 2048  # a VaultStats token carries an agent id (256 characters)
MAX_QUERY_CHARS = 8192  # Search.query
MAX_INJECT_TEXT_CHARS = 65_536  # Inject text + texts, joined
MAX_TYPE_FILTERS = 32  # ListMemories / Search types (each type once is all a filter needs)
MAX_INJECT_TEXTS = 1000  # Inject texts
MAX_MESSAGES = 10_000  # PruneHistory / RenderTranscript messages

NAME_FIELDS = frozenset({
    "id", "agent_id", "channel_id", "source", "topic_id", "source_id", "target_id", "scope",
    "user_id",
})
TEXT_CAPS = {"page_token": MAX_PAGE_TOKEN_CHARS, "query": MAX_QUERY_CHARS}
REPEATED_CAPS = {"types": MAX_TYPE_FILTERS, "texts": MAX_INJECT_TEXTS, "messages": MAX_MESSAGES}

_STRING = FieldDescriptor.TYPE_STRING
_MESSAGE = FieldDescriptor.TYPE_MESSAGE


def check_name(value: str, field: str, max_chars: int = MAX_NAME_CHARS) -> None:
    """A name-like value: at most ``max_chars`` characters, no control characters, no PII."""
    if len(value) > max_chars:
        raise InvalidArgument(
            f"{field} has {len(value)} characters; at most {max_chars}", field=field,
            reason="TOO_LONG")
    if has_control(value):
        raise InvalidArgument(
            f"{field} contains a control character (got {echo(value)}); use printable text",
            field=field, reason="CONTROL_CHARACTER")
    kinds = find_pii_in_name(value)
    if kinds:  # a name is logged and kept in histories: never a secret or an identifier
        raise FailedPrecondition(
            f"{field} contains sensitive data ({', '.join(kinds)}); names and ids must not "
            "carry personal data or secrets (the value is not echoed)", field=field,
            reason=reasons.PII)


def check_text(value: str, field: str, max_chars: int) -> None:
    if len(value) > max_chars:
        raise InvalidArgument(
            f"{field} has {len(value)} characters; at most {max_chars}", field=field,
            reason="TOO_LONG")


def check_count(value: int, field: str, max_value: int) -> None:
    """A count a request may leave at 0 (the default) but not above ``max_value``."""
    if value > max_value:
        raise InvalidArgument(f"{field} must be between 0 and {max_value} (got {value})",
                              field=field, reason="OUT_OF_RANGE")


def check_request(request: Message, prefix: str = "") -> None:
    """Check every name-like and capped string field of ``request`` and its sub-messages."""
    for desc, value in request.ListFields():
        path = f"{prefix}{desc.name}"
        if desc.is_repeated:  # counted here; items are free text or enums, checked where used
            cap = REPEATED_CAPS.get(desc.name)
            if cap is not None and len(value) > cap:
                raise InvalidArgument(f"{path} has {len(value)} items; at most {cap}",
                                      field=path, reason="TOO_MANY")
            continue
        if desc.type == _MESSAGE:
            check_request(value, f"{path}.")
        elif desc.type == _STRING and desc.name in NAME_FIELDS:
            check_name(value, path)
        elif desc.type == _STRING and desc.name in TEXT_CAPS:
            check_text(value, path, TEXT_CAPS[desc.name])
