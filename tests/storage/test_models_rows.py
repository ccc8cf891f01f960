"""storage.models.as_row: the fields of a stored record as a dict, as dataclasses.asdict
gives them."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime

from storage.models import Entity, Fact, as_row


def test_as_row_is_asdict_for_entities_and_facts() -> None:
    ent = Entity("ent_1", "Ada", "person", "A mathematician.", 0.9, "default")
    fact = Fact("rel_1", "ent_1", "wrote", "ent_2", "Ada wrote notes.", 0.8,
                datetime(1843, 1, 1, tzinfo=UTC), None, "wrote")
    assert as_row(ent) == asdict(ent) and as_row(fact) == asdict(fact)
    row = as_row(fact)
    row["fact"] = "changed"  # a new dict each time
    assert fact.fact == "Ada wrote notes." and as_row(fact)["fact"] == "Ada wrote notes."
