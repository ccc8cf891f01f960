"""Smaller planner statistics for the long text columns searched by substring.

Revision ID: 0010
Revises: 0009

``fact_like`` (``relations.fact ILIKE '%term%' OR ...``) and ``entity_summary``
(``entities.summary ILIKE ...``) were planned in 4-7 ms and run in 0.5-2 ms: for each
pattern the planner tried the ILIKE on every most-common value and histogram bound of the
column (up to 200 long texts at the default statistics target) to estimate its selectivity.
Those samples say little about substrings of free text. With a target of 1 the planner
uses its pattern heuristics instead (the histogram is too small to be used): MuSiQue no-LLM
graph, 100 questions, planning 7.1 / 7.4 -> 0.2 / 0.1 ms per question, execution the same
or faster, Postgres CPU per ``ppr`` question 49 -> 38 ms (docs/bench/HISTORY.md, issue 14,
fourth session). Entity names keep the default: short, and their statistics pick better
plans for ``entity_like``.
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_COLUMNS = (("relations", "fact"), ("entities", "summary"))


def upgrade() -> None:
    for table, column in _COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS 1")
        op.execute(f"ANALYZE {table} ({column})")


def downgrade() -> None:
    for table, column in _COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS -1")
        op.execute(f"ANALYZE {table} ({column})")
