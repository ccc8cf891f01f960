"""Sources a person can read (issue 40): the answer's Sources panel and Explore's facts,
driven by AppTest; the CLI's source list."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from streamlit.testing.v1 import AppTest

from graph_flows.query import answer
from graph_flows.services.explore import fact_groups
from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import KnowledgeStore, RelationIn, ids
from tests.pg_fixtures import TEST_DIM, TEST_MODEL
from tests.ui.test_ui_apptest import APP, EXPLORE, TIMEOUT, _texts, seeded_url  # noqa: F401
from ui.cli.ask import print_sources
from ui.web import components

TITLE = "The Relational Model and the First SQL Databases"
QUEL = "Ingres used its own query language, QUEL, which was based on Codd's relational calculus."
CHUNK = (f"# {TITLE}\n## Ingres at Berkeley\n\nAt Berkeley, **Stonebraker** started Ingres in "
         f"1973. {QUEL} It ran on `Unix` <img src=x onerror=alert(1)> [x](javascript:alert(1)).")
URI = "file:///docs/01-relational-origins.md"


def _result() -> dict[str, Any]:
    passages = [{"id": "c1", "label": "P1", "text": CHUNK, "uri": URI, "title": TITLE},
                {"id": "c2", "label": "P2", "text": "Another passage, not cited.",
                 "uri": "javascript:alert(1)", "title": "evil"}]
    text = f"{answer.EXTRACTIVE_HEADER}\n\n{QUEL} [P1]"
    cited, _ = answer.citations(text, [], passages)
    entities = [{"name": "April 2024", "type": "concept", "summary": "a month"},
                {"name": "own query language", "type": "concept", "summary": "x"},
                {"name": "QUEL", "type": "technology", "summary": "Ingres' query language"}]
    return {"answer": text, "answer_mode": "extractive", "citations": cited,
            "passages": passages, "entities": entities, "facts": []}


def _render(result: dict) -> None:
    from ui.web import panels

    panels.render_answer(result, diagram=False)


def test_sources_show_breadcrumb_plain_text_highlight_and_linked_short_name() -> None:
    at = AppTest.from_function(_render, args=(_result(),), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    sources = [e for e in at.expander if e.label.startswith("Sources")]
    assert [e.label for e in sources] == ["Sources (1 cited passage)"]  # no "0 cited facts"
    cited, other = [m.value for m in sources[0].markdown if m.value.startswith("**\\[P")]
    plain = cited.replace("\\", "")
    assert "**[P1]** The Relational Model and the First SQL … › Ingres at Berkeley" in plain
    assert "# " not in plain and "**Stonebraker**" not in plain and "`Unix`" not in plain
    assert f":yellow-background[**{QUEL}**]" in plain  # the cited sentence, highlighted
    assert f"[01-relational-origins.md]({URI})" in plain  # short name, linked
    assert "<img" not in cited.replace("\\<img", "")  # untrusted text stays escaped
    assert "](javascript" not in cited and "](javascript" not in other
    assert "*from:* evil" in other.replace("\\", "")  # no link for a scheme browsers run
    entities = "\n".join(m.value for m in sources[0].markdown).replace("\\", "")
    assert "**April 2024** *(date)*" in entities
    assert "**own query language**" not in entities  # a fragment is not listed
    assert "**QUEL** *(technology)*" in entities


def test_sources_title_counts() -> None:
    assert components.sources_title(0, 3) == "Sources (3 cited passages)"
    assert components.sources_title(1, 1) == "Sources (1 cited fact, 1 cited passage)"
    assert components.sources_title(2, 0) == "Sources (2 cited facts)"
    assert components.sources_title(0, 0) == "Sources"


def test_cli_sources_read_the_same_way() -> None:
    out = io.StringIO()
    print_sources(Console(file=out, width=200, color_system=None), _result())
    text = out.getvalue()
    assert f"[P1] {TITLE} › Ingres at Berkeley  (01-relational-origins.md)" in text
    assert QUEL in text and "# " not in text and "file:///" not in text
    assert "**" not in text


def test_explore_fact_groups_show_each_sentence_once_with_its_relations() -> None:
    s = "Ingres used its own query language, QUEL, which was based on Codd's calculus."
    facts = [{"id": "r1", "fact": s, "subject": "Ingres", "object": "QUEL",
              "predicate": "uses", "predicate_text": "used"},
             {"id": "r2", "fact": s, "subject": "QUEL", "object": "Codd",
              "predicate": "relates_to", "predicate_text": "was based on"},
             {"id": "r3", "fact": s, "subject": "Ingres", "object": "QUEL",
              "predicate": "relates_to", "predicate_text": None},
             {"id": "r4", "fact": "Ingres ran on Unix.", "subject": "Ingres",
              "object": "Unix", "predicate": "relates_to", "predicate_text": None}]
    groups = fact_groups(facts)
    assert [g["fact"] for g in groups] == [s, "Ingres ran on Unix."]
    assert groups[0]["relations"] == [("Ingres", "used", "QUEL"),
                                      ("QUEL", "was based on", "Codd")]
    assert groups[0]["ids"] == ["r1", "r2", "r3"]
    assert groups[1]["relations"] == [("Ingres", "relates to", "Unix")]


def test_explore_page_lists_a_sentence_once_with_its_relation_text(
        seeded_url: str) -> None:  # noqa: F811 - the fixture imported above
    store = KnowledgeStore.open(seeded_url, embedding_model=TEST_MODEL,
                                embedding_dim=TEST_DIM)
    try:  # a second relation read from the seeded sentence, with its words
        babbage = ids.entity_id("Charles Babbage", "person", "default")
        london = ids.entity_id("London", "location", "default")
        store.write_graph([], [RelationIn(babbage, "located_in", london,
                                          "Charles Babbage lived in London.", "default", 0.8,
                                          MiniLMEmbeddings().embed_query("lived in London"),
                                          predicate_text="lived in")])
    finally:
        store.close()
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(EXPLORE).run()
    at.text_input[0].set_value("Charles Babbage").run()
    [b for b in at.button if "Charles Babbage" in b.label][0].click().run()
    assert not at.exception, at.exception
    page = _texts(at).replace("\\", "")
    assert page.count("Charles Babbage lived in London.") == 1, page
    assert "Charles Babbage → *lived in* → London" in page
