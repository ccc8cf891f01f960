"""The Re-DocRED benchmark script on a tiny synthetic file in the dataset's format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import rule_extractor_eval as bench
from graph_flows.indexing.extraction.schema import ExtractedEntity, ExtractedRelation, Extraction

DOCS = [
    {
        "title": "Ada Lovelace",
        "sents": [
            ["Ada", "Lovelace", "worked", "with", "Charles", "Babbage", "on", "the",
             "Analytical", "Engine", "."],
            ["The", "Analytical", "Engine", "is", "part", "of", "the", "Science", "Museum",
             "collection", "since", "1843", "."],
        ],
        "vertexSet": [
            [{"name": "Ada Lovelace", "type": "PER", "sent_id": 0, "pos": [0, 2]},
             {"name": "Lovelace", "type": "PER", "sent_id": 0, "pos": [1, 2]}],
            [{"name": "Charles Babbage", "type": "PER", "sent_id": 0, "pos": [4, 6]}],
            [{"name": "Analytical Engine", "type": "MISC", "sent_id": 0, "pos": [8, 10]}],
            [{"name": "Science Museum", "type": "ORG", "sent_id": 1, "pos": [7, 9]}],
            [{"name": "1843", "type": "TIME", "sent_id": 1, "pos": [11, 12]}],
        ],
        "labels": [
            {"h": 0, "t": 1, "r": "P1327", "evidence": [0]},
            {"h": 2, "t": 3, "r": "P361", "evidence": [1]},
            {"h": 2, "t": 4, "r": "P571", "evidence": [1]},
        ],
    },
    {
        "title": "Empty",
        "sents": [["Nothing", "to", "see", "here", "."]],
        "vertexSet": [[{"name": "Paris", "type": "LOC", "sent_id": 0, "pos": [0, 1]}]],
        "labels": [],
    },
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "test_revised.json"
    path.write_text(json.dumps(DOCS), encoding="utf-8")
    return path


def test_detokenize() -> None:
    tokens = ["Babbage", "'s", "engine", "(", "1837", ")", "was", "n't", "built", ",", "sadly", "."]
    assert bench.detokenize(tokens) == "Babbage's engine (1837) wasn't built, sadly."
    assert bench.detokenize(["``", "Hi", "''", "she", "said"]) == '"Hi" she said'


def test_scores_on_the_synthetic_file(dataset: Path) -> None:
    report = bench.evaluate(bench.load_docs(dataset)).as_dict()
    assert report["documents"] == 2
    assert report["entities"] == {"tp": 4, "predicted": 4, "gold": 6, "precision": 1.0,
                                  "recall": 0.6667, "f1": 0.8}
    assert report["named_entities"]["recall"] == 0.8  # 4 of 5 (1843 is TIME)
    assert report["type_accuracy"]["tp"] == 3  # Ada, Charles (PER), Science Museum (ORG)
    assert report["relations"] == {"tp": 2, "predicted": 2, "gold": 3, "precision": 1.0,
                                   "recall": 0.6667, "f1": 0.8}
    assert report["relations_with_cooccurrence"]["predicted"] == 3
    assert report["typed_relations"] == {"tp": 1, "predicted": 1, "gold": 1, "precision": 1.0,
                                         "recall": 1.0, "f1": 1.0}


def test_scoring_with_a_scripted_extractor() -> None:
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

    report = bench.evaluate(DOCS[:1], extract=fake).as_dict()
    assert report["entities"]["tp"] == 3 and report["entities"]["predicted"] == 4
    assert report["type_accuracy"] == {"tp": 1, "predicted": 2, "gold": 2, "precision": 0.5,
                                       "recall": 0.5, "f1": 0.5}
    assert report["relations"]["tp"] == 1 and report["relations"]["predicted"] == 2
    assert report["typed_relations"]["tp"] == 0  # wrong direction and type for P361


def test_main_prints_a_table_and_json(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main([str(dataset), "--chunk-size", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("documents: 2") and "typed_relations" in out
    assert bench.main([str(dataset), "--json", "--limit", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "Re-DocRED file not found"), ("{oops", "cannot read"),
     ('{"a": 1}', "is not Re-DocRED")],
)
def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               content: str | None, message: str) -> None:
    path = tmp_path / "data.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert bench.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_chunk_size(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main([str(dataset), "--chunk-size", "50"]) == 2
    assert "between 100 and 20000" in capsys.readouterr().err
