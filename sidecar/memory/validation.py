"""Input checks for memory and edge writes. Each failure names the field."""

from __future__ import annotations

import math
import unicodedata

from sidecar.errors import InvalidArgument
from sidecar.records import DEFAULT_IMPORTANCE, MemoryDraft, MemoryType, Relation, Tier
from sidecar.redact import echo

MAX_ID_CHARS = 128
# A restored memory's version: the largest integer a JSON number keeps exactly, far enough
# below the store's int64 that the memory can still be updated and forgotten.
MAX_VERSION = 2**53 - 1
# A restored time, in microseconds since 1970: before 9999-01-01T00:00:00Z, so a later update
# (at least 1 µs after it) is still a valid protobuf Timestamp.
MAX_TIME_US = 253_370_764_800 * 1_000_000


def is_blank(text: str) -> bool:
    """True when ``text`` has nothing visible: only whitespace and Unicode Cf format characters
    (zero-width spaces and joiners, word joiner, BOM, soft hyphen, bidi marks)."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def check_id(value: str, field: str, *, required: bool = True) -> None:
    if not value:
        if required:
            raise InvalidArgument(f"{field} is required", field=field, reason="MISSING_ID")
        return
    if len(value) > MAX_ID_CHARS or not value.isprintable() or value != value.strip():
        raise InvalidArgument(
            f"{field} must be 1..{MAX_ID_CHARS} printable characters without surrounding "
            f"spaces (got {echo(value)})",
            field=field,
            reason="BAD_ID",
        )


def check_unit(value: float, field: str) -> float:
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(
            f"{field} must be a number between 0 and 1 (got {value})",
            field=field,
            reason="OUT_OF_RANGE",
        )
    return float(value)


def resolve_importance(draft: MemoryDraft, field: str = "memory.importance") -> float:
    if draft.importance is None:
        return DEFAULT_IMPORTANCE[draft.type]
    return check_unit(draft.importance, field)


def check_draft(draft: MemoryDraft, max_content_chars: int, prefix: str = "memory") -> None:
    check_id(draft.id, f"{prefix}.id", required=False)
    if draft.channel_private and draft.user_id:
        raise InvalidArgument(
            f"{prefix}.channel_private and {prefix}.user_id exclude each other: a memory is "
            "private to one end user or to one channel", field=f"{prefix}.channel_private",
            reason="BAD_PRIVACY")
    if draft.channel_private and not draft.channel_id:
        raise InvalidArgument(
            f"{prefix}.channel_private needs {prefix}.channel_id (the channel it is recalled "
            "in)", field=f"{prefix}.channel_id", reason="BAD_PRIVACY")
    if is_blank(draft.content):
        raise InvalidArgument(
            f"{prefix}.content is empty or invisible; a memory needs some visible text",
            field=f"{prefix}.content",
            reason="EMPTY_CONTENT",
        )
    if len(draft.content) > max_content_chars:
        raise InvalidArgument(
            f"{prefix}.content has {len(draft.content)} characters, more than the maximum of "
            f"{max_content_chars} (server.max_content_chars); split it into several memories",
            field=f"{prefix}.content",
            reason="CONTENT_TOO_LONG",
        )
    if not isinstance(draft.type, MemoryType):
        raise InvalidArgument(
            f"{prefix}.type must be one of {', '.join(t.name for t in MemoryType)}",
            field=f"{prefix}.type",
            reason="BAD_ENUM",
        )
    if not isinstance(draft.tier, Tier):
        raise InvalidArgument(
            f"{prefix}.tier must be one of {', '.join(t.name for t in Tier)}",
            field=f"{prefix}.tier",
            reason="BAD_ENUM",
        )
    resolve_importance(draft, f"{prefix}.importance")
    if draft.restored is not None:
        check_restored(draft, prefix)


def check_restored(draft: MemoryDraft, prefix: str) -> None:
    """A restore names its memory and carries a version and both timestamps."""
    restored = draft.restored
    assert restored is not None
    check_id(draft.id, f"{prefix}.id")
    if not 1 <= restored.version <= MAX_VERSION:
        raise InvalidArgument(
            f"{prefix}.version must be between 1 and {MAX_VERSION} to restore a memory",
            field=f"{prefix}.version", reason="BAD_RESTORE")
    if not 0 < restored.created_at <= restored.updated_at:
        raise InvalidArgument(
            f"{prefix}.created_at and updated_at must both be set, created_at first, to "
            "restore a memory", field=f"{prefix}.created_at", reason="BAD_RESTORE")
    if restored.updated_at >= MAX_TIME_US:
        raise InvalidArgument(
            f"{prefix}.updated_at must be before 9999-01-01T00:00:00Z to restore a memory",
            field=f"{prefix}.updated_at", reason="BAD_RESTORE")


def check_relation(relation: object, field: str = "edge.relation") -> Relation:
    if not isinstance(relation, Relation):
        raise InvalidArgument(
            f"{field} must be one of {', '.join(r.name for r in Relation)}",
            field=field,
            reason="BAD_ENUM",
        )
    return relation
