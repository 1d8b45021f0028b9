"""How old a memory is, relative to the turn, as a block line says it: ``(written 3 weeks
ago)``, or ``(written 14 Mar 2024)`` from ``date_after_days`` on. The time is the memory's
``created_at`` (a restored import keeps its own)."""

from __future__ import annotations

from datetime import UTC, datetime

HOUR_US = 3_600 * 1_000_000
DAY_US = 24 * HOUR_US
# (below this many days, unit in days, name): the first row that fits words the age.
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_SPANS = ((14, 1, "day"), (60, 7, "week"), (365, 30, "month"))


def age_note(written_us: int, now_us: int, date_after_days: int) -> str:
    """``(written ...)`` for a memory written at ``written_us``, seen at ``now_us``. A time in
    the future (another host's clock) reads as just written."""
    age = max(0, now_us - written_us)
    days = age // DAY_US
    if days >= date_after_days:
        day = datetime.fromtimestamp(written_us / 1e6, UTC)
        return f"(written {day.day} {MONTHS[day.month - 1]} {day.year})"
    return f"(written {_relative(age)})"


def _relative(age_us: int) -> str:
    hours, days = age_us // HOUR_US, age_us // DAY_US
    if hours < 1:
        return "just now"
    if days < 1:
        return "an hour ago" if hours == 1 else f"{hours} hours ago"
    if days < 2:
        return "yesterday"
    for below, unit, name in _SPANS:
        if days < below:
            count = days // unit
            return f"{count} {name}{'s' if count > 1 else ''} ago"
    years = days // 365
    return "a year ago" if years == 1 else f"{years} years ago"
