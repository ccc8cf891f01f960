"""The one definition of a fragment name (graph_flows.shared.fragments)."""

from __future__ import annotations

import pytest

from graph_flows.shared.fragments import fragment_share, is_fragment


@pytest.mark.parametrize("name", [
    "City and County of", "University of Vienna The Botanical Garden of", "Mother of",
    "Revolt of the", "own query language", "its successor", "the University",
    'Relational Model of Data for Large Shared Data Banks" in Co', "Codd's", "1992",
    "3,000", "(Ingres", "the", "Of", "", "query language called", "a language named",
])
def test_fragments(name: str) -> None:
    assert is_fragment(name)


@pytest.mark.parametrize("name", [
    "QUEL", "Edgar F. Codd", "The Hague", "Stand By Me", "University of California, Berkeley",
    "relational calculus", "Black Hawk Down", "Ingres (database)",
    "Saint Peter's Basilica", "R2-D2", "The Man Called Flintstone", "Called to Serve",
    "US", "WHO", "IT",
])
def test_names(name: str) -> None:
    assert not is_fragment(name)


def test_a_number_is_a_fragment_unless_it_is_the_answer() -> None:
    assert is_fragment("1986")
    assert not is_fragment("1986", answers=["1986"])
    assert fragment_share(["1986", "QUEL", "Mother of"], answers=["1986"]) == (1, 3)
