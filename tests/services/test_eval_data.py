"""Readers of the evaluation files: one-line errors naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graph_flows.services.evaluation.data import (
    EvalInputError,
    detokenize,
    read_corpus,
    read_questions,
    read_redocred,
)

PASSAGE = {"id": "p1", "title": "T", "text": "Some text."}
QUESTION = {"id": "q1", "question": "Who?", "answer": "Ada", "answer_aliases": ["A. L."],
            "supporting_passage_ids": ["p1"]}


def write(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
                    encoding="utf-8")
    return path


def test_reads_corpus_and_questions(tmp_path: Path) -> None:
    (p,) = read_corpus(write(tmp_path, PASSAGE, ""))
    assert (p.id, p.full_text) == ("p1", "T Some text.")
    (q,) = read_questions(write(tmp_path, QUESTION))
    assert q.answers == ("Ada", "A. L.") and q.gold == ("p1",)


@pytest.mark.parametrize(("reader", "lines", "message"), [
    (read_corpus, [PASSAGE, {"id": "p2", "title": "T"}], ":2: missing field 'text'"),
    (read_corpus, [PASSAGE, "{not json"], ":2: not a JSON object"),
    (read_corpus, ["[1, 2]"], ":1: not a JSON object"),
    (read_corpus, [PASSAGE, PASSAGE], ":2: field 'id' repeats 'p1'"),
    (read_corpus, [""], "no passages in the file"),
    (read_questions, [{**QUESTION, "answer": 3}], ":1: field 'answer' is empty or of the wrong"),
    (read_questions, [QUESTION, {k: v for k, v in QUESTION.items() if k != "question"}],
     ":2: missing field 'question'"),
    (read_questions, [{**QUESTION, "supporting_passage_ids": []}],
     ":1: field 'supporting_passage_ids' must be"),
    (read_redocred, [{"text": "x", "entities": [], "relations": [{"head": 0}]}],
     ":1: field 'relations' needs objects"),
])
def test_bad_input_is_one_line_naming_file_line_and_field(
        tmp_path: Path, reader: object, lines: list[object], message: str) -> None:
    path = write(tmp_path, *lines)
    with pytest.raises(EvalInputError) as err:
        reader(path)  # type: ignore[operator]
    assert str(err.value).startswith(str(path)) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="no such file"):
        read_corpus(tmp_path / "nope.jsonl")


def test_detokenize() -> None:
    tokens = ["Babbage", "'s", "engine", "(", "1837", ")", "was", "n't", "built", ",", "sadly", "."]
    assert detokenize(tokens) == "Babbage's engine (1837) wasn't built, sadly."
    assert detokenize(["``", "Hi", "''", "she", "said"]) == '"Hi" she said'
