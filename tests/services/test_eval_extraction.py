"""`krag eval extraction` on a tiny Re-DocRED-shaped file (the shared JSON-lines format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graph_flows.indexing.extraction import rules
from graph_flows.indexing.extraction.schema import ExtractedEntity, ExtractedRelation, Extraction
from graph_flows.services.evaluation.aliases import AliasCount, score_document
from graph_flows.services.evaluation.data import GoldDocument, GoldEntity, read_redocred
from graph_flows.services.evaluation.extraction import evaluate
from storage.resolution import DocumentEntity
from tests.procs import run_cli


def entity(name: str, kind: str, *aliases: str) -> dict[str, object]:
    return {"name": name, "type": kind, "aliases": [name, *aliases],
            "mentions": [{"name": n} for n in (name, *aliases)]}


DOCS = [
    {
        "doc_id": "d0", "title": "Ada Lovelace",
        "text": "Ada Lovelace worked with Charles Babbage on the Analytical Engine . ...",
        "sents": [
            ["Ada", "Lovelace", "worked", "with", "Charles", "Babbage", "on", "the",
             "Analytical", "Engine", "."],
            ["The", "Analytical", "Engine", "is", "part", "of", "the", "Science", "Museum",
             "collection", "since", "1843", "."],
        ],
        "entities": [entity("Ada Lovelace", "PER", "Lovelace"),
                     entity("Charles Babbage", "PER"), entity("Analytical Engine", "MISC"),
                     entity("Science Museum", "ORG"), entity("1843", "TIME")],
        "relations": [
            {"head": 0, "tail": 1, "relation_id": "P1327", "relation": "partner"},
            {"head": 2, "tail": 3, "relation_id": "P361", "relation": "part of"},
            {"head": 2, "tail": 4, "relation_id": "P571", "relation": "inception"},
        ],
    },
    {
        "doc_id": "d1", "title": "Empty", "text": "Nothing to see here .",
        "sents": [["Nothing", "to", "see", "here", "."]],
        "entities": [entity("Paris", "LOC")], "relations": [],
    },
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "redocred.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n", encoding="utf-8")
    return path


def test_scores_of_the_rule_extractor(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "load_nlp", lambda: None)  # the rules alone, without spaCy
    report = evaluate(read_redocred(dataset)).as_dict()
    assert report["documents"] == 2
    assert report["entities"] == {"tp": 4, "predicted": 4, "gold": 6, "P": 1.0,
                                  "R": 0.6667, "F1": 0.8}
    assert report["named_entities"]["R"] == 0.8  # 4 of 5 (1843 is TIME)
    # Ada, Charles (PER) and Science Museum (ORG) are matched; only what the rules type right
    assert report["type_counts"]["matched"] == 3
    assert report["type_accuracy"] == round(report["type_counts"]["correct"] / 3, 4)
    assert report["pairs"] == {"tp": 2, "predicted": 2, "gold": 3, "P": 1.0, "R": 0.6667,
                               "F1": 0.8}
    assert report["pairs_with_cooccurrence"]["predicted"] == 3
    assert report["typed"] == {"tp": 1, "predicted": 1, "gold": 1, "P": 1.0, "R": 1.0,
                               "F1": 1.0}


def test_scoring_with_a_scripted_extractor(dataset: Path) -> None:
    def fake(_: str) -> Extraction:
        return Extraction(
            entities=[ExtractedEntity(name=n, type=t) for n, t in [
                ("lovelace", "person"), ("Science Museum", "location"), ("Analytical Engine",
                 "technology"), ("Invented", "concept")]],
            relations=[
                ExtractedRelation(subject="Science Museum", predicate="contains",
                                  object="Analytical Engine"),
                ExtractedRelation(subject="Lovelace", predicate="relates_to", object="Invented"),
            ],
        )

    report = evaluate(read_redocred(dataset)[:1], extract=fake).as_dict()
    assert report["entities"]["tp"] == 3 and report["entities"]["predicted"] == 4
    assert report["type_accuracy"] == 0.5  # lovelace person: right; Science Museum: wrong
    assert report["pairs"]["tp"] == 1 and report["pairs"]["predicted"] == 2
    assert report["typed"]["tp"] == 0  # wrong direction and type for P361



def test_cli_prints_a_table_and_one_json_object(
        dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "eval", "extraction", "--redocred", str(dataset), "--json")
    report = json.loads(out)
    assert code == 0 and set(report) >= {"entities", "named_entities", "type_accuracy",
                                         "pairs", "typed"}
    assert set(report["typed"]) >= {"P", "R", "F1"}
    rules_only = report["baselines"]["rules_only"]  # the fallback, scored in the same run
    assert set(rules_only) >= {"entities", "named_entities", "type_accuracy", "pairs", "typed"}
    # the alias measure, through the real ingest: Ada Lovelace is written two ways (the
    # surname never alone in this text: one stored entity holds her names, both ways)
    assert report["aliases"]["multi_name"] == 1 and report["offset"] == 0
    assert report["aliases"]["merged"] == 1 and report["aliases"]["false_merges"] == 0
    base = report["aliases_without_short_forms"]
    assert base["multi_name"] == 1 and base["merged"] == 1 and base["false_merges"] == 0
    assert report["alias_scope"].startswith("eval-aliases-")
    assert report["alias_scope_without_short_forms"] == report["alias_scope"] + "-nosf"
    code, out, _ = run_cli(capsys, "eval", "extraction", "--redocred", str(dataset),
                           "--chunk-size", "0")
    assert code == 0 and "named_entities" in out and "type accuracy" in out
    assert "aliases (scope eval-aliases-" in out and "without joining short forms" in out
    code, out, _ = run_cli(capsys, "eval", "extraction", "--redocred", str(dataset),
                           "--offset", "1", "--no-aliases", "--json")
    report = json.loads(out)
    assert code == 0 and report["documents"] == 1 and "aliases" not in report


def test_alias_measure_counts_merges_splits_and_false_merges() -> None:
    doc = GoldDocument("", (
        GoldEntity(("Paul Robeson", "Robeson"), "PER"),
        GoldEntity(("Latin American School of Medicine", "ELAM"), "ORG"),
        GoldEntity(("John Smith", "Smith"), "PER"), GoldEntity(("Anna Smith",), "PER"),
        GoldEntity(("People 's Republic", "People's Republic"), "LOC"),  # one spelling
        GoldEntity(("1970", "the year 1970"), "TIME")), ())

    def ent(i: int, name: str, *aliases: str) -> DocumentEntity:
        return DocumentEntity("d", f"e{i}", name, "x", aliases)

    count = AliasCount()
    score_document(doc, [ent(1, "Paul Robeson", "Robeson"),            # merged
                         ent(2, "Latin American School of Medicine"),  # split from ELAM
                         ent(3, "ELAM"),
                         ent(4, "John Smith", "Anna Smith"),           # a false merge
                         ent(5, "Mars")], count)                      # matches nothing
    # John Smith's one matched name lands in one entity: merged, whatever else it holds
    assert count.as_dict() == {
        "multi_name": 3, "merged": 2, "rate": 0.6667, "observable": 2,
        "observable_merged": 1, "observable_rate": 0.5, "false_merges": 1,
        "matched_entities": 4, "false_merge_rate": 0.25}


def test_cli_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "x", "entities": []}\n', encoding="utf-8")
    code, _, err = run_cli(capsys, "eval", "extraction", "--redocred", str(path))
    assert code == 2
    assert err.strip().splitlines() == [f"error: {path}:1: missing field 'relations'"]
    code, _, err = run_cli(capsys, "eval", "extraction", "--redocred", str(path),
                           "--chunk-size", "50")
    assert code == 2 and "between 100 and 20000" in err
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(DOCS[1]) + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "eval", "extraction", "--redocred", str(good),
                           "--offset", "3")
    assert code == 2 and err.strip() == f"error: --offset 3 skips every document of {good}"
    code, _, err = run_cli(capsys, "eval", "extraction", "--redocred", str(good),
                           "--offset", "-1")
    assert code == 2 and "--limit and --offset must be 0 or more" in err
