"""Contradictions on single-valued attributes: the newer fact closes the older one.

A relation may name an ``attribute`` of its subject that holds one value at a time ("ceo",
"headquarters", "current_version"). Facts of one scope with the same subject and attribute
form a *group*; at most one fact of a group with a given object is open (``invalid_at`` is
NULL) at any time. :func:`settle` restores that after writes and removals by replaying the
group's open facts in write order (``created_at``; within one write, by ``valid_at``):

* the next fact supersedes the current one, which gets ``invalid_at`` = the next fact's
  ``valid_at`` (or now, when it has none: the undated fact then gets ``valid_at`` = now, so
  "as of" a past date still sees the old value), ``invalidated_by`` = its id and
  ``invalid_reason`` = ``'superseded'``;
* unless both carry dates and the next fact's is earlier: then the next fact is history, and
  it is the one closed, at the earliest later ``valid_at`` in its group (open or closed): a
  2016 report arriving after the 2019 and 2022 ones is valid 2016-2019.

Nothing is deleted. When the superseding fact itself is removed (its documents are gone), the
facts it closed are reopened and their groups settled again (:func:`reopen`).
Writers take a transaction-scoped advisory lock per group (:func:`lock_groups`) before
writing, so two workers can not both leave a contradicting fact open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

SUPERSEDED = "superseded"
Group = tuple[str, str, str]  # scope, subject_id, attribute

_GROUP_ROWS = """
SELECT r.id, r.object_id, r.valid_at, r.invalid_at, r.scope, r.subject_id, r.attribute
FROM relations r
JOIN unnest(CAST(:scopes AS text[]), CAST(:subjects AS text[]), CAST(:attrs AS text[]))
     AS g(scope, subject_id, attribute)
  ON r.scope = g.scope AND r.subject_id = g.subject_id AND r.attribute = g.attribute
WHERE r.invalid_at IS NULL OR r.valid_at IS NOT NULL
ORDER BY r.scope, r.subject_id, r.attribute, r.created_at, r.valid_at NULLS LAST, r.id
"""

_CLOSE = """
UPDATE relations
SET invalid_at = coalesce(CAST(:at AS timestamptz), now()), invalidated_by = :by,
    invalid_reason = :reason, updated_at = now()
WHERE id = :id AND invalid_at IS NULL
"""


@dataclass(frozen=True, slots=True)
class Closed:
    """One fact closed by :func:`settle`: ``id`` stopped being valid at ``at`` (None: now)
    because of ``by``."""

    id: str
    by: str
    at: datetime | None


def lock_groups(conn: Connection, groups: Iterable[Group]) -> None:
    """Transaction-scoped advisory locks on the groups, in a fixed order (no deadlocks)."""
    for key in sorted({"\x1f".join(g) for g in groups}):
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 5))"), {"k": key})


def settle(conn: Connection, groups: Iterable[Group]) -> list[Closed]:
    """Close every contradicted open fact in ``groups``; returns what was closed."""
    keys = sorted(set(groups))
    if not keys:
        return []
    params = {"scopes": [k[0] for k in keys], "subjects": [k[1] for k in keys],
              "attrs": [k[2] for k in keys]}
    rows = conn.execute(text(_GROUP_ROWS), params).all()  # open, or dated (even closed)
    dated: dict[Group, list[Any]] = {}
    for d in sorted((r for r in rows if r.valid_at is not None),
                    key=lambda r: (r.valid_at, r.id)):
        dated.setdefault((d.scope, d.subject_id, d.attribute), []).append(d)
    closed: list[Closed] = []
    undated: list[str] = []
    current: dict[Group, Any] = {}
    for row in (r for r in rows if r.invalid_at is None):  # in write order
        key = (row.scope, row.subject_id, row.attribute)
        cur = current.get(key)
        if cur is None or cur.object_id == row.object_id:
            current[key] = row if cur is None else cur
            continue
        if cur.valid_at is not None and row.valid_at is not None and row.valid_at < cur.valid_at:
            nxt = next(d for d in dated[key]  # the new one is history, up to the next value
                       if d.valid_at > row.valid_at and d.object_id != row.object_id)
            closed.append(Closed(row.id, nxt.id, nxt.valid_at))
            continue
        closed.append(Closed(cur.id, row.id, row.valid_at))
        if row.valid_at is None:
            undated.append(row.id)
        current[key] = row
    for c in closed:
        conn.execute(text(_CLOSE), {"at": c.at, "by": c.by, "id": c.id,
                                    "reason": SUPERSEDED})
    if undated:  # known from the moment it replaced the old value, not "always"
        conn.execute(text("UPDATE relations SET valid_at = now() WHERE id = ANY(:ids) "
                          "AND valid_at IS NULL"), {"ids": undated})
    return closed


def reopen(conn: Connection, removed_ids: Sequence[str]) -> list[str]:
    """Reopen facts that were superseded by the now removed ``removed_ids``, then settle
    their groups again. Returns the ids reopened (some may have been closed again)."""
    if not removed_ids:
        return []
    rows = conn.execute(text("""
        UPDATE relations SET invalid_at = NULL, invalidated_by = NULL, invalid_reason = NULL,
               updated_at = now()
        WHERE invalidated_by = ANY(:ids) AND invalid_reason = :reason
        RETURNING id, scope, subject_id, attribute"""),
        {"ids": list(removed_ids), "reason": SUPERSEDED}).all()
    groups = [(r.scope, r.subject_id, r.attribute) for r in rows if r.attribute is not None]
    lock_groups(conn, groups)
    settle(conn, groups)
    return [r.id for r in rows]
