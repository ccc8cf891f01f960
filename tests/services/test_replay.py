"""The replay model server: recorded extractions answered over the OpenAI wire protocol to the
real langchain-openai client, then validated, resolved and stored (real embedded PostgreSQL)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.extraction.llm import extract_with_llm, structured
from graph_flows.services.evaluation.data import EvalInputError, Passage
from graph_flows.services.evaluation.multihop import REPLAY_SPEC, _ingest, _Run
from graph_flows.services.evaluation.replay import (
    ReplayBook,
    ReplayServer,
    fold,
    map_recording,
    read_recordings,
)
from graph_flows.shared.providers import make_chat_model
from graph_flows.shared.resources import Resources, use_resources
from storage import KnowledgeStore

PASSAGES = [
    Passage("toy:heron", "Heron Works",
            "Heron Works is a boatyard in Kelmouth founded by Ines Varga in 1932. "
            "It builds wooden ketches."),
    Passage("toy:varga", "Ines Varga",
            "Ines Varga was a shipwright trained in Dunmore. She married Tomas Reyl."),
    Passage("toy:plain", "Lantern Bay", "Lantern Bay is a cove with a shingle beach."),
]
RECORDINGS = [  # written here, in the shape of GPT-3.5's OpenIE output (one malformed triple)
    {"passage_id": "toy:heron", "entities": ["Heron Works", "Kelmouth", "Ines Varga", "1932"],
     "triples": [["Heron Works", "is a boatyard in", "Kelmouth"],
                 ["Heron Works", "founded by", "Ines Varga"],
                 ["Heron Works", "founded in", "1932"],
                 ["Heron Works", "builds", "wooden ketches"],
                 ["Heron Works", "builds", "boats", "of wood"]]},
    {"passage_id": "toy:varga", "entities": ["Ines Varga", "Dunmore", "Tomas Reyl"],
     "triples": [["Ines Varga", "trained in", "Dunmore"], ["Ines Varga", "married", "Tomas Reyl"]]},
]


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "openie.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDINGS), encoding="utf-8")
    return path


def test_real_client_parses_replies_and_a_missing_recording_is_an_http_error(
        recording: Path) -> None:
    book = ReplayBook(read_recordings(recording), PASSAGES)
    with ReplayServer(book) as server:
        model = replay_model(server.base_url)
        heron = extract_with_llm(structured(model), {
            "id": "c1", "text": PASSAGES[0].full_text, "source": "s", "uri": "toy:heron"})
        plain = extract_with_llm(structured(model), {
            "id": "c2", "text": PASSAGES[2].full_text, "source": "s", "uri": "toy:plain"})
        streamed = httpx.post(f"{server.base_url}/chat/completions",
                              json={"model": "replay", "stream": True, "messages": []})
        models = httpx.get(f"{server.base_url}/models").json()
    assert heron.error is None and heron.llm_calls == 1 and heron.malformed == 1
    relations = heron.extraction["relations"]
    assert [(r["subject"], r["predicate"], r["object"]) for r in relations][:2] == [
        ("Heron Works", "is a boatyard in", "Kelmouth"), ("Heron Works", "founded by",
                                                          "Ines Varga")]
    assert {e["name"] for e in heron.extraction["entities"]} >= {"wooden ketches", "1932"}
    assert plain.extraction is None
    assert "422" in plain.error and "no recorded extraction for passage toy:plain" in plain.error
    assert streamed.status_code == 400 and "does not stream" in streamed.text
    assert models["data"][0]["id"] == "replay"
    assert server.stats["no_recording"] == 1 and server.stats["answered"] == 1


def replay_model(base_url: str) -> object:
    """The product's own model factory pointed at the replay server."""
    from graph_flows.shared.settings import Settings

    return make_chat_model(REPLAY_SPEC, Settings(openai_base_url=base_url, chat_model="none"),
                           temperature=0.0, streaming=False)


def test_chunks_of_a_long_passage_share_the_recording() -> None:
    rec = read_like({"entities": ["Alder", "Birch"],
                     "triples": [["Alder", "grows near", "Birch"], ["Birch", "shades", "Cedar"],
                                 ["Oak grove", "lies beside", "the river"]]})
    passage = fold("Alder grows near Birch. Birch shades Cedar.")
    first = map_recording(rec, fold("Alder grows near Birch."), passage, first=True)
    second = map_recording(rec, fold("Birch shades Cedar."), passage, first=False)
    assert [r["object"] for r in first["relations"]] == ["Birch", "Cedar", "the river"]
    assert [r["object"] for r in second["relations"]] == ["Birch", "Cedar"]
    assert [e["name"] for e in second["entities"]] == ["Birch", "Alder", "Cedar"]


def read_like(obj: dict[str, list[object]]) -> object:
    from graph_flows.services.evaluation.replay import Recording

    return Recording(tuple(obj["entities"]), tuple(obj["triples"]))


def test_bad_recording_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"passage_id": "a", "triples": []}\n{"entities": []}\n', encoding="utf-8")
    with pytest.raises(EvalInputError, match=r"bad.jsonl:2: field 'passage_id'"):
        read_recordings(path)


def test_replayed_extraction_lands_in_the_store_and_the_run_goes_on(
        resources: Resources, store: KnowledgeStore, recording: Path) -> None:
    book = ReplayBook(read_recordings(recording), PASSAGES)
    with ReplayServer(book) as server:
        settings = resources.settings.model_copy(update={
            "openai_base_url": server.base_url, "openai_api_key": None})
        res = replace(resources, settings=settings, chat_override=None, _chat_cache={})
        run = _Run(res, "replay-test", {p.id: p for p in PASSAGES}, [], lambda *_: None)
        with use_resources(res):
            report = _ingest(run, PASSAGES, IndexingContext(extraction_model=REPLAY_SPEC))
    assert report["mode"] == "llm" and report["model"] == REPLAY_SPEC
    assert report["extracted_chunks"] == 2 and report["failed_chunks"] == 1
    assert report["dropped"].get("malformed") == 1
    (reason,) = report["failure_reasons"]
    assert "no recorded extraction for passage <id>" in reason
    with store.connect() as conn:
        facts = {r[0] for r in conn.exec_driver_sql(
            "SELECT fact FROM relations WHERE scope = 'replay-test'")}
        failed = conn.exec_driver_sql(
            "SELECT s.error FROM extraction_status s JOIN chunks c ON c.id = s.chunk_id "
            "JOIN documents d ON d.id = c.document_id WHERE s.status = 'failed'").all()
    assert "Heron Works founded by Ines Varga" in facts
    assert "Heron Works founded in 1932" in facts and "Ines Varga married Tomas Reyl" in facts
    assert len(failed) == 1 and "toy:plain" in failed[0][0]
