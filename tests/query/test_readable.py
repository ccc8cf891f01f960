"""A passage as a person reads it (graph_flows.query.readable) and the supporting sentences
of the no-LLM answer (graph_flows.query.extractive.on_chain): pure functions, no database."""

from __future__ import annotations

from graph_flows.indexing.documents.chunking import chunk_text
from graph_flows.query import answer, extractive, readable

DOC = """# The Relational Model and the First SQL Databases

Intro text about databases.

## Ingres at **Berkeley**

At the University of California, Berkeley, Michael Stonebraker and Eugene Wong started the
Ingres project in 1973. Ingres used its own query language, *QUEL*, which was based on
Codd's relational calculus. Ingres ran on [Unix](https://en.wikipedia.org/wiki/Unix).
"""
QUEL = "Ingres used its own query language, QUEL, which was based on Codd's relational calculus."


def _ingres_chunk() -> str:
    (chunk,) = [c for c in chunk_text(DOC, size=400, overlap=0) if "QUEL" in c]
    return chunk


def test_breadcrumb_comes_from_the_headings_the_chunker_writes() -> None:
    chunk = _ingres_chunk()
    assert chunk.startswith("# The Relational Model")  # what the passage used to show
    heads, body = readable.split_headings(chunk)
    assert heads == ["The Relational Model and the First SQL Databases", "Ingres at Berkeley"]
    assert body.lstrip().startswith("At the University") and "#" not in body
    fields = readable.passage_fields({"text": chunk, "title": "The Relational Model",
                                      "uri": "file:///srv/docs/01-relational-origins.md"})
    assert fields == {"section": heads, "document": "01-relational-origins.md"}
    # no headings: the title places it, unless the short name is already that title
    assert readable.breadcrumb("Plain text.", "Annual report", "file:///r/report.pdf") == [
        "Annual report"]
    assert readable.breadcrumb("Plain text.", "Journal", "musique:00001") == []


def test_plain_text_drops_markdown_markers_and_keeps_html_as_text() -> None:
    _, body = readable.split_headings(_ingres_chunk())
    plain = readable.plain_text(body)
    assert "*QUEL*" not in plain and QUEL in " ".join(plain.split())
    assert "Ingres ran on Unix." in plain and "](" not in plain
    hostile = "A <img src=x onerror=alert(1)> tag, `code`, **bold**\n\n- item one\n- item *two*"
    assert readable.plain_text(hostile) == (
        "A <img src=x onerror=alert(1)> tag, code, bold\nitem one\nitem two")
    assert readable.plain_text("| a | b |\n|---|---|\n| 1 | 2 |") == "a | b\n1 | 2"


def test_short_name_and_link() -> None:
    assert readable.document_name("T", "file:///a/b/01-x.md") == "01-x.md"
    assert readable.document_name("T", "https://ex.org/wiki/Foo%20Bar") == "Foo Bar"
    assert readable.document_name("Journal", "musique:00001") == "Journal"
    assert readable.document_name(None, "musique:00001") == "musique:00001"
    assert readable.link("javascript:alert(1)") is None
    assert readable.link("data:text/html,<b>x</b>") is None
    assert readable.link("file:///a b(1).md") == "file:///a%20b%281%29.md"
    assert readable.link("https://x.org/a?b=1#c") == "https://x.org/a?b=1#c"


def test_cited_sentence_quoted_or_paraphrased_and_its_window() -> None:
    chunk = _ingres_chunk()
    extractive_answer = f"{answer.EXTRACTIVE_HEADER}\n\n{QUEL} [P2]\n"
    assert readable.cited_sentence(chunk, extractive_answer, "P2") == QUEL
    assert readable.cited_sentence(chunk, extractive_answer, "P1") == ""
    llm = "QUEL, the language of Ingres, was based on Codd's relational calculus [P2][F1]."
    assert readable.cited_sentence(chunk, llm, "P2") == QUEL
    _, body = readable.split_headings(chunk)
    before, mark, after = readable.window(readable.plain_text(body), QUEL, width=120)
    assert mark == QUEL and before.startswith("…") and after.endswith("…")
    assert not before.endswith(" ") and not after.startswith(" ")
    assert readable.window("short text", "absent") == ("short text", "", "")


def test_passage_citations_carry_section_document_and_sentence() -> None:
    chunk = _ingres_chunk()
    passage = {"id": "c1", "text": chunk, "uri": "file:///docs/01-relational-origins.md",
               "title": "The Relational Model and the First SQL Databases", "label": "P1"}
    cited, unknown = answer.citations(f"{QUEL} [P1]", [], [passage])
    assert unknown == []
    (c,) = cited
    assert c["section"] == ["The Relational Model and the First SQL Databases",
                            "Ingres at Berkeley"]
    assert c["document"] == "01-relational-origins.md" and c["sentence"] == QUEL
    assert c["text"] == chunk and c["uri"] == passage["uri"]  # the keys it had stay


def test_dates_are_dates() -> None:
    for name in ("April 2024", "4 July 1776", "March 3, 1901", "2024-04", "the 1990s"):
        assert readable.is_date(name), name
    for name in ("Ingres", "May Day", "June Carter", "April Stevens 2024 tour"):
        assert not readable.is_date(name), name


# -- supporting sentences of the no-LLM answer ----------------------------------------------
TITLE = "The Relational Model and the First SQL Databases"
QUESTION = "Which query language was based on Codd's relational calculus?"
PAPER = "In June 1970 Codd published A Relational Model of Data in Communications of the ACM."
SEQUEL = ("Donald Chamberlin and Raymond Boyce designed SEQUEL, the Structured English Query "
          "Language, for System R in 1974.")


def _passages(*texts: str) -> list[dict[str, str]]:
    return [{"id": f"c{i}", "label": f"P{i}", "title": TITLE, "text": t}
            for i, t in enumerate(texts, start=1)]


def _fact(subject: str, obj: str, sentence: str, label: str) -> dict[str, str]:
    return {"id": label, "label": label, "subject": subject, "object": obj, "fact": sentence}


def test_supporting_sentences_are_about_the_question_or_the_answer_chain() -> None:
    """The demo's off-topic line: the SEQUEL sentence shares only the document's title (and
    a word of "Relational Model", named by the Codd sentence) with the answer; it names no
    thing of the question, and not QUEL or Ingres, which the lead says."""
    passages = _passages(QUEL, PAPER, SEQUEL)
    facts = [_fact("Codd", "A Relational Model of Data", PAPER, "F1"),
             _fact("Donald Chamberlin", "SEQUEL", SEQUEL, "F2")]
    picked = [c.sentence for c in extractive.pick(QUESTION, facts, passages)]
    assert picked[0] == QUEL
    assert SEQUEL not in picked, picked
    assert PAPER in picked  # it names Codd, a name of the question


def test_a_supporting_sentence_may_follow_the_chain_past_the_bridge() -> None:
    """Two hops: the lead names the bridge (Kael), the next sentence is about it; a sentence
    kept through the bridge adds its own names (Trelvik) as the next link."""
    q = "Where did the founder of Harrowgate Foods grow up?"
    lead = "Harrowgate Foods was founded by Orsina Kael in 1987."
    hop = "Orsina Kael grew up in Trelvik, a fishing town."
    third = "Trelvik lies on the northern coast."
    noise = "Harrowgate is a spa town with Victorian baths."
    passages = [{"id": "a", "label": "P1", "title": "Harrowgate Foods", "text": lead},
                {"id": "b", "label": "P2", "title": "Orsina Kael", "text": hop},
                {"id": "c", "label": "P3", "title": "Trelvik", "text": third},
                {"id": "d", "label": "P4", "title": "Spa towns", "text": noise}]
    q_ = extractive.question(q)
    cands = {c.sentence: c for c in extractive.candidates([], passages)}
    linked = extractive.said_names(cands[lead], q_, "place")
    assert frozenset(extractive.terms("Orsina Kael")) in linked
    assert extractive.on_chain(cands[hop], q_, linked)
    assert not extractive.on_chain(cands[third], q_, linked)  # not yet: Trelvik is 2 hops on
    linked += extractive.said_names(cands[hop], q_, "place")
    assert extractive.on_chain(cands[third], q_, linked)
    # a name is every word of its run: "English" alone does not name "Structured English
    # Query Language"
    who = extractive.question("Who designed SEQUEL?")
    (lead_c,) = extractive.candidates([], _passages(SEQUEL))
    porter = "The Porter stemmer, published in 1980, reduces English words to their stem."
    (other,) = extractive.candidates([], [{"id": "x", "label": "P9", "title": "Stemming",
                                           "text": porter}])
    names = extractive.said_names(lead_c, who, "person")
    assert frozenset(extractive.terms("Structured English Query Language")) in names
    assert not extractive.on_chain(other, who, names)


def test_a_passage_titled_by_part_of_a_linked_name_is_on_the_chain() -> None:
    """MuSiQue-style: the lead names "the English Lake District"; the passage titled "Lake
    District" is about it ("It is located ... Cumbria"); a passage naming only the
    question's other word is not dropped (it names the question), one naming neither is."""
    q = extractive.question("Where is the district that Knott is part of located in the UK?")
    said = "Knott is a mountain in the northern part of the English Lake District."
    lead = extractive.Candidate(0, said, "P1", extractive.terms(said), extractive.terms("Knott"))
    linked = extractive.said_names(lead, q, "place")
    it = "It is located entirely within the county of Cumbria."
    titled = extractive.Candidate(1, it, "P2", extractive.terms(it),
                                  extractive.terms("Lake District"))
    other = extractive.Candidate(2, it, "P3", extractive.terms(it), extractive.terms("Keswick"))
    assert extractive.on_chain(titled, q, linked)
    assert not extractive.on_chain(other, q, linked)
    nameless = extractive.question("who formed the colony whose sport is jousting?")
    assert not nameless.names and extractive.on_chain(other, nameless, [])  # no anchor


def test_name_runs_are_whole_names() -> None:
    assert extractive.name_runs(SEQUEL) == [
        "Donald Chamberlin", "Raymond Boyce", "SEQUEL", "Structured English Query Language",
        "System R"]
    assert extractive.name_runs(SEQUEL, numbers=True)[-1] == "1974"
    assert extractive.name_runs("He studied at the University of Kansas, then at Yale.") == [
        "University of Kansas", "Yale"]
    assert extractive.name_runs("Several companies grew out of Ingres.") == ["Ingres"]
