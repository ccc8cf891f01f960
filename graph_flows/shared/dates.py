"""The one date parser: what a user, a model or a stored row may say a date is.

Accepted everywhere (CLI ``--as-of``, graph input ``as_of``, UI, MCP, extracted ``valid_at``):
``YYYY`` (its first day), ``YYYY-MM`` (its first day), ``YYYY-MM-DD`` and full ISO 8601 with
an offset or ``Z``. A time without an offset is read as UTC. Dates and datetimes pass through.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from graph_flows.shared.control_chars import control_message

FORMATS_HELP = "use YYYY, YYYY-MM, YYYY-MM-DD or an ISO 8601 date-time"
_PARTIAL = re.compile(r"(\d{4})(?:-(\d{1,2}))?")


class DateParseError(ValueError):
    """A value that is not a date; ``str()`` is one line naming the field and the formats."""


def parse_date(value: object) -> datetime | None:
    """``value`` as an aware UTC datetime, or None when it is empty or not a date."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = str(value).strip()
    if not text:
        return None
    if partial := _PARTIAL.fullmatch(text):
        year, month = int(partial[1]), int(partial[2] or 1)
        return datetime(year, month, 1, tzinfo=UTC) if year >= 1 and 1 <= month <= 12 else None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def require_date(value: object, *, field: str = "as_of") -> datetime | None:
    """Like :func:`parse_date`, but a non-empty value that is not a date is an input error
    (one holding a control character says so)."""
    if isinstance(value, str) and (message := control_message(field, value)):
        raise DateParseError(message)
    parsed = parse_date(value)
    if parsed is None and value is not None and str(value).strip():
        raise DateParseError(f"{field} {str(value)[:40]!r} is not a date: {FORMATS_HELP}")
    return parsed


def day(value: object) -> str | None:
    """``YYYY-MM-DD`` of anything :func:`parse_date` reads (as after a JSON round trip)."""
    parsed = parse_date(value)
    return parsed.date().isoformat() if parsed else None
