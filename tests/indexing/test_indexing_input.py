"""The indexing graph's input is checked at its entry (graph_flows/indexing/inputs.py): a bad
input is one line in an InvalidIndexingInputError and nothing is stored; control characters
in document text are cleaned away, never stored."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from graph_flows import indexing_flow
from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.inputs import InvalidIndexingInputError
from graph_flows.services import ingest as runner
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import KnowledgeStore
from tests.pg_fixtures import rows

NOTHING = ("nothing to ingest: give paths, texts or records (a run that only extracts "
           "chunks already stored names their scope or source).")
BAD = [
    ({"texts": "not a list"}, "texts must be a list of document texts, got str "
                              "'not a list'; e.g. texts: [\"...\"]."),
    ({}, NOTHING),
    ({"texts": []}, "nothing to ingest: the paths, texts and records given are empty; give "
                    "at least one."),
    ({"paths": [], "records": []}, "nothing to ingest: the paths, texts and records given "
                                   "are empty; give at least one."),
    ({"retry_failed": False}, NOTHING),
    ({"texts": ["Ada wrote notes.", "  "]}, "texts[1] must be a non-empty string (document "
                                           "text), got '  '."),
    ({"paths": "notes.md"}, "paths must be a list of file or folder paths, got str "
                            "'notes.md'; e.g. paths: [\"...\"]."),
    ({"paths": ["ok.md", "bad\x00.md"]}, "paths[1] contains a control character (U+0000 at "
                                         "character 4); remove it and try again."),
    ({"texts": ["Ada."], "source": "so\x1bx"}, "source contains a control character "
                                               "(U+001B at character 3); remove it and try "
                                               "again."),
    ({"texts": ["Ada."], "scope": "de\x00f"}, "scope contains a control character (U+0000 "
                                              "at character 3); remove it and try again."),
    ({"texts": ["Ada."], "scope": "a b"}, "invalid scope name 'a b': use 1-100 letters, "
                                          "digits or -_.:/"),
    ({"records": [{"uri": "u\x85", "text": "Ada."}]},
     "records[0].uri contains a control character (U+0085 at character 2); remove it and "
     "try again."),
    ({"records": [{"uri": "u", "body": "Ada."}]},
     "records[0] has an unknown key 'body'; a record has uri, text and (optionally) title."),
    ({"records": [{"uri": "u"}]}, "records[0].text must be a string."),
    ({"records": [{"uri": " ", "text": "Ada."}]}, "records[0].uri must be a non-empty string."),
    ({"texts": ["Ada."], "extract": "no"}, "extract must be true or false, got 'no'."),
    ({"source": "s", "extract": False}, "nothing to do: extract is false and no paths, "
                                        "texts or records are given."),
    ({"path": ["notes.md"]}, "unknown field 'path'; did you mean 'paths'? Accepted fields: "
                             "paths, texts, records, source, scope, retry_failed, extract."),
]


@pytest.fixture
def resources(store: KnowledgeStore) -> Any:
    res = Resources(Settings(_env_file=None), store, DeterministicFakeEmbedding(size=384),
                    chat_override=NO_LLM)
    with use_resources(res):
        yield res


def _stored(store: KnowledgeStore) -> int:
    return rows(store, "SELECT count(*) FROM documents")[0][0]


@pytest.mark.parametrize(("inputs", "message"), BAD)
def test_bad_input_is_one_line_and_nothing_is_stored(
        resources: Resources, inputs: dict[str, Any], message: str,
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(InvalidIndexingInputError) as caught:
        indexing_flow.invoke(inputs)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)
    assert _stored(resources.store) == 0
    # refused at the entry: no node ran (none logged, none touched the store)
    assert not [r for r in caplog.records if r.name.startswith("graph_flows.indexing")]


def test_the_ingest_service_refuses_before_anything_starts(resources: Resources) -> None:
    with pytest.raises(InvalidIndexingInputError, match=r"^paths\[0\] contains a control"):
        runner.ingest({"paths": ["a\x00b"], "scope": "default"}, IndexingContext(), workers=1)
    with pytest.raises(InvalidIndexingInputError, match="^nothing to ingest"):
        runner.ingest({"paths": [], "scope": "default"}, IndexingContext(), workers=1)
    assert _stored(resources.store) == 0


def test_runs_that_name_what_they_extract_still_run(resources: Resources) -> None:
    """A worker's input (scope and source, no documents) and a retry are not "nothing"."""
    for inputs in ({"scope": "default", "source": None}, {"source": "s"},
                   {"retry_failed": True}):
        out = indexing_flow.invoke(inputs)
        assert out["chunks"].get("claimed", 0) == 0, inputs


def test_control_characters_in_document_text_are_cleaned_not_stored(
        resources: Resources, tmp_path: Path) -> None:
    """Document text is not refused: cleaning removes NUL and the other controls, from
    texts, records and files alike (a file with NUL bytes is skipped as binary)."""
    doc = tmp_path / "engine.md"
    doc.write_text("# The Analytical\x01 Engine\n\nCharles Babbage\x7f designed the "
                   "Analytical Engine.\n\n" + "It was a mechanical computer. " * 10)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"Ada\x00Lovelace\x00")
    out = indexing_flow.invoke({
        "texts": ["Ada\x00 Lovelace wrote the first\x08 program."],
        "records": [{"uri": "notes", "text": "Grace Hopper\x00 built\x9f COBOL.",
                     "title": "Hopper\x00 notes"}, {"uri": "empty", "text": ""}],
        "paths": [str(doc), str(binary)]})
    assert out["documents"]["new"] == 3, out
    assert [(f["uri"].rsplit("/", 1)[-1], f["reason"][:20]) for f in out["failures"]] == [
        ("binary.txt", "looks binary (NUL by"), ("empty", "text is empty; nothi")]
    texts = [r[0] for r in rows(resources.store, "SELECT text FROM chunks")]
    titles = [r[0] for r in rows(resources.store, "SELECT title FROM documents")]
    assert "Ada Lovelace wrote the first program." in texts
    assert "Grace Hopper built COBOL." in texts
    assert any("Charles Babbage designed" in t for t in texts), texts
    assert {"The Analytical Engine", "Hopper notes"} <= set(titles), titles
    stored = "".join(texts + [t or "" for t in titles])
    assert not any(c in stored for c in "\x00\x01\x08\x7f\x9f")
