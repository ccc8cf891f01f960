"""The relation a sentence states between two names it holds (graph_flows.query.sentence_link):
the words between their closest mentions, in reading order, trimmed at the ends; nothing
when the gap names something else or is too long to be one relation."""

from __future__ import annotations

import random
import re

from graph_flows.query.sentence_link import MAX_WORDS, first_link, link, spans


def test_the_words_between_two_names_in_reading_order() -> None:
    found = link("Brightmoor was founded by the Reyes family.", "Reyes family", "Brightmoor")
    assert (found.first, found.text, found.second) == ("Brightmoor", "was founded by",
                                                       "Reyes family")
    relative = link("Ingres, which uses QUEL, was built at Berkeley.", "QUEL", "ingres")
    assert (relative.first, relative.text, relative.second) == ("ingres", "uses", "QUEL")


def test_the_closest_mentions_are_read() -> None:
    """A title before the sentence repeats the name: the gap is read from the repeat."""
    found = link("26th Chess Olympiad The 26th Chess Olympiad, organized by FIDE, took place",
                 "26th Chess Olympiad", "FIDE")
    assert found is not None and found.text == "organized by"


def test_no_link_when_the_gap_names_something_else_or_is_no_relation() -> None:
    listed = "Last Vegas stars Michael Douglas, Robert De Niro, Morgan Freeman and others."
    assert link(listed, "Michael Douglas", "Morgan Freeman") is None  # a list, no relation
    assert link("Kael was born in 1931 in Trelvik.", "Kael", "Trelvik") is None  # a date
    assert link("Ingres and QUEL.", "Ingres", "QUEL") is None  # only a conjunction
    assert link("Ingres uses QUEL.", "Ingres", "Postgres") is None  # one is not named
    assert link("Ingres uses QUEL.", "Ingres", "Ingres uses") is None  # not apart
    long_gap = "Ingres " + " ".join(["then"] * (MAX_WORDS + 1)) + " QUEL."
    assert link(long_gap, "Ingres", "QUEL") is None
    assert first_link(["Ingres and QUEL.", "QUEL was designed for Ingres."],
                      "Ingres", "QUEL").text == "was designed for"


def _regex_spans(sentence: str, name: str) -> list[tuple[int, int]]:
    """The regular expression spans() stands for (and still runs beyond ASCII)."""
    words = name.split()
    pattern = r"\s+".join(re.escape(w) for w in words)
    return [(m.start(), m.end())
            for m in re.finditer(rf"(?<![\w]){pattern}(?![\w])", sentence, re.IGNORECASE)]


def test_spans_find_what_the_regular_expression_finds() -> None:
    """ASCII text is searched without compiling a pattern per name: the same spans as the
    case-insensitive whole-word expression, spacing folded, left to right, no overlap."""
    cases = [
        ("Brightmoor was founded by the Reyes  family.", "reyes family"),
        ("The Reyes\nfamily; the REYES family_x, reyes family", "Reyes Family"),
        ("a a a a", "a a"),
        ("New York-based New  York, NewYork New\tYork", "New York"),
        ("x_Ingres Ingres2 (Ingres) Ingres.", "Ingres"),
        ("Kim Jong-il's mother", "Jong-il"),
        ("Ingres uses QUEL.", "Postgres"),
        ("Ingres\x1cuses QUEL.", "ingres uses"),
        ("Straße in Köln, STRASSE", "Köln"),  # beyond ASCII: the expression itself
        ("the ſtate of Ohio", "state"),
    ]
    for sentence, name in cases:
        assert spans(sentence, name) == _regex_spans(sentence, name), (sentence, name)
    rng = random.Random(7)
    alphabet = "aAb_ .,\t\n1-'()"
    for _ in range(20000):
        sentence = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        name = "".join(rng.choice("aAb_ 1-") for _ in range(rng.randint(1, 5)))
        if name.split() and any(c.isalnum() for c in name):
            assert spans(sentence, name) == _regex_spans(sentence, name), (sentence, name)
