"""bench.fragment_names.count: the fragment measure of a stored graph."""

from __future__ import annotations

from bench.fragment_names import count


def test_count_splits_numbers_from_word_fragments() -> None:
    got = count(["QUEL", "1992", "Mother of", "Mother of", 'Banks" in Co'],
                [", was based on", "was based on", "uses"])
    assert (got["entities"], got["fragments"], got["numbers"], got["words"]) == (5, 4, 1, 3)
    assert got["share"] == 0.8 and got["examples"] == ["Mother of", 'Banks" in Co']
    assert got["relation_texts_punctuated"] == 1
    assert got["punctuated_examples"] == [", was based on"]
