"""The no-LLM second hop (issue 41): hop-1 passages, the bridge chosen from them, the bridge's
passage placed right after its hop-1 passage, and the "covered" test read from hop-1
passages only. Pure functions (spaCy's parse when installed); the loop itself runs against
the real PostgreSQL in tests/query/test_query_loop.py."""

from __future__ import annotations

from typing import Any

import pytest

from graph_flows.query import (
    confidence,
    extractive,
    follow_up,
    hop_one,
    loop,
    second_hop,
)
from graph_flows.shared.nlp import load_nlp
from storage.bridges import BridgeChunk

QUESTION = "Who was the first president of the society which published the Arden Review?"
ARDEN = {"id": "c1", "document_id": "d1", "uri": "d1", "title": "Arden Review",
         "text": "Arden Review The Arden Review is a British quarterly journal published by "
                 "the Lumen Society on behalf of the Corvin Circle. Its editor is Mara Quill "
                 "of Halden University."}


def row(chunk: str, doc: str, title: str = "", text: str = "") -> dict[str, Any]:
    return {"id": chunk, "document_id": doc, "uri": doc, "title": title, "text": text}


def test_hop_one_passages_are_those_of_the_named_things_one_each_two_at_most() -> None:
    passages = [row("c0", "d0", "Review (magazine)", "Review A review is ..."),
                ARDEN, row("c1b", "d1", "Arden Review", "More of the Arden Review."),
                row("c2", "d2", "Arden Review (1901 series)", "An older Arden Review ..."),
                row("c3", "d3", "notes.md", "Lumen Society was founded in 1880."),
                row("c4", "d4", "Corvin", "Corvin is a town.")]
    hops = hop_one.hop_one_passages(QUESTION, ["Arden Review"], passages)
    # "Review (magazine)" names only part of the thing; the second "Arden Review" document
    # is the same thing; "Corvin" is not named by the question
    assert [h.passage["id"] for h in hops] == ["c1"] and hops[0].by == "title"
    comparison = "Which was founded first, the Lumen Society or the Arden Review?"
    hops = hop_one.hop_one_passages(comparison, ["Lumen Society", "Arden Review"], passages)
    assert [(h.passage["id"], h.by) for h in hops] == [("c1", "title"), ("c3", "lead")]
    # accents folded: "Tekezé River" is the "Tekeze River" the question names
    tekeze = row("c9", "d9", "Tekezé River", "Tekezé River The Tekezé is a river.")
    assert hop_one.hop_one_passages("Where does the Tekeze River end?", [], [tekeze])
    assert hop_one.hop_one_passages(QUESTION, ["Arden Review"], passages[:1]) == []


@pytest.mark.skipif(load_nlp() is None, reason="the spaCy pipeline is not installed")
def test_the_bridge_is_the_mention_the_passage_ties_to_the_question_s_relation() -> None:
    (hop,) = hop_one.hop_one_passages(QUESTION, ["Arden Review"], [ARDEN])
    q = extractive.question(QUESTION, ["Arden Review"])
    mentioned = [{"id": i, "name": n} for i, n in enumerate(
        ["Arden Review", "British", "Lumen Society", "Corvin Circle", "Mara Quill",
         "Halden University", "1880", "journal"])]
    cands = hop_one.candidates(hop, mentioned, q, confidence.relation_words(q))
    # "published by the Lumen Society": two links from the relation word "published";
    # the question's own name, an adjective, a number and a common noun are no bridges
    assert [c.name for c in cands][:2] == ["Lumen Society", "Corvin Circle"]
    assert cands[0].link == pytest.approx(0.5) and "published" in cands[0].why
    assert not {"Arden Review", "British", "1880", "journal"} & {c.name for c in cands}
    assert all(c.link == 0 for c in cands if c.name in ("Mara Quill", "Halden University"))


def test_the_choice_weighs_the_link_and_the_bridge_s_passage_alike() -> None:
    cands = [hop_one.Candidate("a", "Lumen Society", 0.5, "2 links"),
             hop_one.Candidate("b", "Corvin Circle", 0.33, "3 links"),
             hop_one.Candidate("c", "Mara Quill", 0.0, "none")]

    def hit(entity: str, doc: str, sim: float) -> BridgeChunk:
        return BridgeChunk(entity, row(f"c-{doc}", doc, doc), False, sim)

    near = [hit("a", "lumen", 0.40), hit("a", "lumen2", 0.45), hit("b", "corvin", 0.50),
            hit("c", "quill", 0.30)]
    pick, best, why = second_hop.choose(cands, near)
    # a: 0.5 + (0.45 - 0.30) / 0.20 = 1.25; b: 0.33 + 1.0 = 1.33: b's passage matches more
    assert (pick.name, best.row["uri"]) == ("Corvin Circle", "corvin")
    assert "0.50" in why
    near[2] = hit("b", "corvin", 0.42)  # now a wins: its link and its best passage, 0.45
    assert second_hop.choose(cands, near)[:2] == (cands[0], near[1])
    assert second_hop.choose(cands, []) is None  # no passage outside hop-1: no bridge


def test_the_bridge_s_passage_goes_right_after_its_hop_one_passage() -> None:
    old = [row("c1", "d1"), row("c1b", "d1"), row("c2", "d2"), row("c3", "d3"),
           row("c4", "d4"), row("c5", "d5"), row("c6", "d6")]
    state = {"passages": old, "facts": [{"id": "f1"}], "entities": [{"id": "e1"}],
             "search_metrics": {"ppr": {"ranked": [p["id"] for p in old] + ["c7"]}}}
    bridge = {**row("c6", "d6"), "methods": ["bridge"]}
    merged, added = loop.merge_hops(state, [("c1", bridge)], [{"id": "f2"}],
                                    [{"id": "e2", "methods": ["bridge"]}])
    order = ["c1", "c1b", "c6", "c2", "c3", "c4", "c5"]  # moved up, after both d1 chunks
    assert [p["id"] for p in merged["passages"]] == order
    assert merged["search_metrics"]["ppr"]["ranked"] == [*order, "c7"]
    assert added == {"passages": 0, "facts": 1, "entities": 1}
    # a new passage comes in at that place; one already above it stays where it is
    merged, added = loop.merge_hops(state, [("c3", row("c9", "d9")), ("c4", row("c2", "d2"))],
                                    [], [])
    assert [p["id"] for p in merged["passages"]] == [
        "c1", "c1b", "c2", "c3", "c9", "c4", "c5", "c6"]
    assert added["passages"] == 1
    # a hop-1 passage no longer in the evidence: nothing moves
    assert loop.merge_hops(state, [("zz", row("c9", "d9"))], [], [])[0]["passages"] == old


def test_only_the_hop_one_passages_words_count_as_covered() -> None:
    question = "Who is the spouse of the director of Jump for Glory?"
    jump = row("c1", "d1", "Jump for Glory", "Jump for Glory Jump for Glory is a 1937 film "
               "directed by Raoul Walsh.")
    other = row("c2", "d2", "Spouse (film)", "The director of Spouse was born in 1901; his "
                "spouse and the film's director were married.")
    # the other film's passage says "spouse" and "director": the old test stopped here
    verdict = follow_up.assess(question, ["Jump for Glory"], [other, jump], [], [])
    assert verdict.stop is None and [h.passage["id"] for h in verdict.hops] == ["c1"]
    assert "spouse" in verdict.uncovered
    covering = {**jump, "text": jump["text"] + " Walsh's spouse was Mary Edwards."}
    assert follow_up.assess(question, ["Jump for Glory"], [covering], [], []).stop \
        == loop.HOP1_COVERED


def test_a_hedge_goes_to_the_start_of_the_tail_a_placed_bridge_after_its_passage() -> None:
    old = [row(f"c{n}", f"d{n}") for n in range(1, 9)]
    state = {"passages": old, "facts": [], "entities": [],
             "search_metrics": {"ppr": {"ranked": [p["id"] for p in old] + ["x1", "x2"]}}}
    # the bridge c9 after hop-1 c1, c10 after c9; the hedges c11 and x2 (ranked, not in
    # the evidence) at the start of the tail, after five documents, in their order
    merged, added = loop.merge_hops(state, [("c1", row("c9", "d9")), ("c9", row("c10", "d10"))],
                                    [], [], [row("c11", "d11"), row("x2", "dx2")])
    assert [p["id"] for p in merged["passages"]][:8] == [
        "c1", "c9", "c10", "c2", "c3", "c11", "x2", "c4"]
    assert merged["search_metrics"]["ppr"]["ranked"][:8] == [
        "c1", "c9", "c10", "c2", "c3", "c11", "x2", "c4"]
    assert added["passages"] == 4
    # one already in the head stays where it is
    merged, _ = loop.merge_hops(state, [], [], [], [row("c2", "d2")])
    assert merged["passages"] == old



def test_the_choice_is_hedged_in_the_tail_by_the_bridge_s_own_document_and_the_runner_up(
        ) -> None:
    cands = [hop_one.Candidate("a", "Lumen Society", 0.5, "2 links"),
             hop_one.Candidate("b", "Corvin Circle", 0.33, "3 links"),
             hop_one.Candidate("c", "Mara Quill", 0.0, "none")]

    def hit(entity: str, doc: str, sim: float, own: bool = False) -> BridgeChunk:
        return BridgeChunk(entity, row(f"c-{doc}", doc, doc), own, sim)

    near = [hit("a", "Lumen Society", 0.40, own=True), hit("a", "lumen history", 0.45),
            hit("b", "corvin", 0.42), hit("c", "quill", 0.30)]
    cand, best, _ = second_hop.choose(cands, near)
    out = second_hop.Followed()
    titles = second_hop._hedge(cand, best, cands, near, out)
    # the placed passage is not the bridge's own article: that goes to the tail, then the
    # runner-up's best passage (Corvin Circle: .33 + .83 over Mara Quill's 0)
    assert best.row["uri"] == "lumen history"
    assert titles == ["Lumen Society", "corvin"]
    assert [r["id"] for r in out.tail] == ["c-Lumen Society", "c-corvin"]
    assert all(r["methods"] == ["bridge"] for r in out.tail)
    # the own article placed already, one candidate: nothing to hedge with
    alone = second_hop.Followed()
    assert second_hop._hedge(cands[0], near[0], cands[:1], near[:1], alone) == []
    assert alone.tail == []


class _CountingParser:
    """The real spaCy pipeline, counting one-by-one calls and batches (and their texts)."""

    def __init__(self, nlp: Any) -> None:
        self.nlp, self.calls, self.batches = nlp, 0, []

    def __call__(self, text: str, **kw: Any) -> Any:
        self.calls += 1
        return self.nlp(text, **kw)

    def pipe(self, texts: Any, **kw: Any) -> Any:
        texts = list(texts)
        self.batches.append(texts)
        return self.nlp.pipe(texts, **kw)


@pytest.mark.skipif(load_nlp() is None, reason="the spaCy pipeline is not installed")
def test_the_parse_is_one_batch_read_before_the_mentions_and_the_same_as_one_by_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The follow-up parses a hop-1 passage in one batch (spaCy's per-call overhead is most
    of a short sentence's parse), before the mentions are known (beside the round's first
    statement); the links read from it are those of each sentence parsed on its own."""
    nlp, skip = hop_one._parser()
    counting = _CountingParser(nlp)
    monkeypatch.setattr(hop_one, "_parser", lambda: (counting, skip))
    q = extractive.question(QUESTION, ["Arden Review"])
    relation = confidence.relation_words(q)
    text = ARDEN["text"] + " The Lumen Society published it first in Halden. Rain fell."
    said = [(n, text.index(n)) for n in ("Lumen Society", "Corvin Circle", "Mara Quill")]
    said.append(("Halden", text.rindex("Halden")))
    parsed = hop_one.parse(text, relation)
    # the two sentences that say a relation word ("published"), in one batch; no other
    assert counting.calls == 0 and len(counting.batches) == 1
    assert len(counting.batches[0]) == 2 and sorted(parsed) == sorted(
        start for start, s in hop_one._sentences(text) if "published" in s)
    one_by_one = {start: nlp(s, disable=skip) for start, s in hop_one._sentences(text)}
    expected = hop_one.links(text, said, relation, one_by_one)
    assert hop_one.links(text, said, relation, parsed) == expected
    # without a parse given, links parses the sentences that hold a mention: one batch
    assert hop_one.links(text, said, relation) == expected
    assert counting.calls == 0 and len(counting.batches) == 2
    assert expected[0][0] == pytest.approx(0.5) and expected[3][0] > 0
