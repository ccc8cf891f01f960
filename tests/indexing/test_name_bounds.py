"""Where a name begins and ends (graph_flows.indexing.extraction.name_bounds)."""

from __future__ import annotations

import pytest

from graph_flows.indexing.extraction.name_bounds import (
    is_junk,
    trim_name,
    trim_predicate,
    trim_span,
)


@pytest.mark.parametrize(("raw", "name"), [
    ("the Semantic Web in", "Semantic Web"),
    ("own query language", "query language"),
    ("its successor", "successor"),
    ("query language called", "query language"),
    ("City and County of", "City and County"),
    ("Revolt of the", "Revolt"),
    ('Relational Model of Data for Large Shared Data Banks" in Co',
     "Relational Model of Data for Large Shared Data Banks"),
    ("Maria (Counting Crows", "Maria"),
    ("(Ingres", "Ingres"),
    ('"Studio Tan', "Studio Tan"),
    ("1980s and", "1980s"),
    ("between 1492 and 1502", "1492 and 1502"),
    ("The Hague", "The Hague"),
    ("University of California, Berkeley", "University of California, Berkeley"),
    ("Ingres (database)", "Ingres (database)"),
    ("The Man Called Flintstone", "The Man Called Flintstone"),
    ("the", ""),
])
def test_trim_name(raw: str, name: str) -> None:
    assert trim_name(raw) == name


def test_a_quotation_the_span_began_inside_keeps_its_inside() -> None:
    sentence = 'Codd published "A Relational Model" in Communications of the ACM.'
    start = sentence.index("Relational")
    end = sentence.index(" of the ACM")
    cut = trim_span(sentence, start, end)
    assert cut is not None and sentence[cut[0]:cut[1]] == "Relational Model"
    opened = sentence.index('"A')
    cut = trim_span(sentence, sentence.index("published") + 10, opened + 2)
    assert cut is not None and sentence[cut[0]:cut[1]] == "A"


@pytest.mark.parametrize(("name", "junk"), [
    ("The", True), ("Of", True), ("Mother of", True), ("1992", False), ("US", False),
    ("McDonald's", False), ("Semantic Web", False),
])
def test_is_junk(name: str, junk: bool) -> None:
    assert is_junk(name) is junk


@pytest.mark.parametrize(("raw", "said"), [
    (", was based on", "was based on"), (", is located in the", "is located in"),
    ("described the", "described"), ("'s", ""), ("'ll be", ""), ("♠", ""),
    ("is part of (since 2001)", "is part of (since 2001)"), ("uses", "uses"),
])
def test_trim_predicate(raw: str, said: str) -> None:
    assert trim_predicate(raw) == said
