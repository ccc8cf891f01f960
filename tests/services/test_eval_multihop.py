"""`krag eval multihop` end to end on a tiny corpus, no LLM, real embedded PostgreSQL."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph_flows.query import loop
from graph_flows.services.evaluation.data import EvalInputError
from graph_flows.services.evaluation.multihop import (
    graph_passages,
    parse_extraction,
    parse_recipe,
)
from tests.procs import run_cli

PASSAGES = [
    ("wiki:orchard", "Pellworth Orchard",
     "Pellworth Orchard is an apple orchard near the village of Tarnby. It was planted by "
     "the gardener Mirela Quast in 1911."),
    ("wiki:quast", "Mirela Quast",
     "Mirela Quast was a gardener born in the city of Olvenhaven. She trained at the Royal "
     "Horticultural College."),
    ("wiki:olvenhaven", "Olvenhaven",
     "Olvenhaven is a port city on the northern coast. Its harbour handles grain and timber."),
    ("wiki:tarnby", "Tarnby",
     "Tarnby is a small village known for its cider festival held every October."),
    ("wiki:comet", "Comet Brisvald",
     "Comet Brisvald is a periodic comet discovered by the astronomer Henrik Sollen."),
]
QUESTIONS = [
    {"id": "q1", "question": "In which city was the gardener who planted Pellworth Orchard born?",
     "answer": "Olvenhaven", "answer_aliases": [],
     "supporting_passage_ids": ["wiki:orchard", "wiki:quast"],
     "decomposition": [  # the question holds hop 1 whole: the replay asks hop 2
         {"question": "Who planted Pellworth Orchard?", "answer": "Mirela Quast",
          "passage_id": "wiki:orchard"},
         {"question": "In which city was #1 born?", "answer": "Olvenhaven",
          "passage_id": "wiki:quast"}]},
    {"id": "q2", "question": "Who discovered Comet Brisvald?", "answer": "Henrik Sollen",
     "answer_aliases": ["Sollen"], "supporting_passage_ids": ["wiki:comet"]},
]
RETRIEVAL_KEYS = {"R@2", "R@5", "R@10", "AllSupp@10", "MRR", "Ans@ctx", "latency_ms"}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    corpus, questions = tmp_path / "corpus.jsonl", tmp_path / "questions.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "dataset": "toy", "title": t, "text": x})
                              + "\n" for i, t, x in PASSAGES), encoding="utf-8")
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return corpus, questions


@pytest.fixture
def env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in [k for k in os.environ if k.startswith("KRAG_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KRAG_DATABASE_URL", db_url)
    monkeypatch.setenv("KRAG_DATA_DIR", str(tmp_path / ".krag"))
    monkeypatch.setenv("KRAG_CHAT_MODEL", "none")
    monkeypatch.setenv("COLUMNS", "160")
    yield



def test_multihop_json_finds_gold_passages_and_reuses_the_corpus(
        env: None, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    corpus, questions = files
    args = ("eval", "multihop", "--corpus", str(corpus), "--questions", str(questions), "--json")
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    report = json.loads(out)
    assert set(report["krag"]) == RETRIEVAL_KEYS | {"Ans@answer"}  # the no-LLM answer's
    assert set(report["baselines"]) == {"dense", "bm25"}
    for name in ("dense", "bm25"):
        assert set(report["baselines"][name]) == RETRIEVAL_KEYS
        assert set(report["baselines"][name]["latency_ms"]) == {"p50", "p95"}
    assert {"chunks", "seconds", "chunks_per_s"} <= set(report["ingest"])
    assert report["ingest"]["chunks"] == len(PASSAGES)
    assert report["ingest"]["extracted_chunks"] == len(PASSAGES)
    assert report["baselines"]["dense"]["R@10"] == 1.0  # 5 passages: every gold is in top 10
    assert report["baselines"]["bm25"]["R@10"] == 1.0
    assert report["krag"]["R@10"] > 0  # the graph reaches at least one gold passage
    conf = report["confidence"]
    assert list(conf) == ["high", "medium", "low", "none"]
    assert sum(row["n"] for row in conf.values()) == len(QUESTIONS)
    right = sum(row["correct"] for row in conf.values())
    assert right == round(report["krag"]["Ans@answer"] * len(QUESTIONS))
    halves = report["confidence_halves"]
    assert [sum(r["n"] for r in halves[h].values()) for h in ("even", "odd")] == [1, 1]
    drawing = report["diagram"]  # each answer's own diagram, parsed
    assert set(drawing) == {"drawn", "nodes_p50", "nodes_p95", "nodes_max", "edges",
                            "labelled_share", "answer_shown", "answer_shown_of",
                            "question_entities_shown", "fragment_names_share",
                            "none_answers", "none_diagrams"}
    assert drawing["none_answers"] == conf["none"]["n"] and drawing["none_diagrams"] == 0
    assert drawing["nodes_max"] <= 12 and drawing["labelled_share"] in (None, 1.0)
    assert drawing["answer_shown"] <= drawing["answer_shown_of"] <= len(QUESTIONS)
    # retrieval by half (even: q1, odd: q2) and by the gold decomposition's hop count (q1)
    assert set(report["krag_halves"]) == {"even", "odd"}
    assert set(report["krag_by_hops"]) == {"2-hop"}
    assert report["krag_by_hops"]["2-hop"] == report["krag_halves"]["even"]

    code, out, _ = run_cli(capsys, *args)
    again = json.loads(out)
    assert code == 0 and again["scope"] == report["scope"]
    assert again["ingest"]["extracted_chunks"] == 0  # unchanged documents are free
    assert again["krag"]["R@10"] == report["krag"]["R@10"]

    code, out, _ = run_cli(capsys, *args[:-1])
    assert code == 0 and "Passage retrieval" in out and "bm25 (baseline)" in out
    assert "answers by confidence (right/labelled): high " in out

    code, out, err = run_cli(capsys, *args, "--recipe", "ppr")  # embeds the chunks first
    ppr = json.loads(out)
    assert code == 0, err
    assert ppr["recipe"] == "ppr" and ppr["scope"] == report["scope"]
    assert ppr["krag"]["R@10"] == 1.0  # ranked passages come first; 5 passages in all
    assert ppr["krag"]["Ans@answer"] >= 0.5  # "Henrik Sollen" in the extractive answer


def test_bad_input_is_one_line_with_file_line_and_field(
        env: None, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    corpus, questions = files
    questions.write_text(json.dumps(QUESTIONS[0]) + "\n" + json.dumps({"question": "Why?"})
                         + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "eval", "multihop", "--corpus", str(corpus),
                           "--questions", str(questions))
    assert code == 2
    assert err.strip().splitlines() == [f"error: {questions}:2: missing field 'answer'"]
    questions.write_text(json.dumps({**QUESTIONS[0], "supporting_passage_ids": ["wiki:x"]})
                         + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "eval", "multihop", "--corpus", str(corpus),
                           "--questions", str(questions))
    assert code == 2 and err.strip().splitlines() == [
        f"error: {questions}:1: field 'supporting_passage_ids' names 'wiki:x', which is not "
        "in the corpus"]
    code, _, err = run_cli(capsys, "eval", "multihop", "--corpus", str(corpus.parent / "x"),
                           "--questions", str(questions))
    assert code == 2 and err.strip().splitlines() == [f"error: {corpus.parent / 'x'}: no such file"]


def test_extraction_modes(tmp_path: Path) -> None:
    assert parse_extraction("rules") == "rules"
    with pytest.raises(EvalInputError, match="no such replay file"):
        parse_extraction(f"replay:{tmp_path / 'nope.jsonl'}")
    recording = tmp_path / "openie.jsonl"
    recording.write_text("{}\n", encoding="utf-8")
    assert parse_extraction(f"replay:{recording}") == f"replay:{recording}"
    with pytest.raises(EvalInputError, match="must be 'rules' or 'replay:FILE'"):
        parse_extraction("llm")


def test_graph_passages_ranks_facts_then_entities_without_repeats() -> None:
    result = {"facts": [{"sources": [{"uri": "b"}, {"uri": "a"}]}, {"sources": [{"uri": "b"}]}],
              "entities": [{"id": "e1"}, {"id": "e2"}]}
    assert graph_passages(result, {"e1": ["c", "a"], "e2": ["d"]}) == ["b", "a", "c", "d"]


def test_graph_passages_put_ranked_passages_first() -> None:
    result = {"passages": [{"uri": "c"}, {"uri": "b"}],
              "facts": [{"sources": [{"uri": "b"}, {"uri": "a"}]}]}
    assert graph_passages(result, {}) == ["c", "b", "a"]


def test_recipe_option(env: None, files: tuple[Path, Path],
                       capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_recipe(None) is None and parse_recipe("ppr") == "ppr"
    corpus, questions = files
    code, _, err = run_cli(capsys, "eval", "multihop", "--corpus", str(corpus),
                           "--questions", str(questions), "--recipe", "magic")
    assert code == 2
    assert err.strip().splitlines() == [
        "error: --recipe must be one of split, rrf, ppr, got 'magic'"]


def test_natural_prose_set_is_harness_input() -> None:
    """tests/data/natural_prose runs through `krag eval multihop` as it is."""
    from graph_flows.services.evaluation.data import check_gold, read_corpus, read_questions

    data = Path(__file__).resolve().parents[1] / "data" / "natural_prose"
    passages = read_corpus(data / "corpus.jsonl")
    questions = read_questions(data / "questions.jsonl")
    check_gold(data / "questions.jsonl", questions, {p.id for p in passages})
    assert len(passages) >= 6 and 15 <= len(questions) <= 25


def test_replayed_planner_runs_follow_ups_and_counts_calls(
        env: None, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    corpus, questions = files
    args = ("eval", "multihop", "--corpus", str(corpus), "--questions", str(questions),
            "--json")
    code, out, err = run_cli(capsys, *args, "--planner", "replay", "--max-rounds", "3")
    assert code == 0, err
    plan = json.loads(out)["planner"]
    assert plan["mode"] == "replay" and plan["max_rounds"] == 3
    assert plan["rounds"] == {"1": 1, "2": 1}  # q1: the question, then hop 2
    assert plan["follow_ups"] == {"llm": 1}
    server = plan["server"]
    assert server["unknown_question"] == 1  # q2 has no decomposition: 422, counted
    assert server["sub_questions"] == 1 and plan["calls"] == server["requests"] >= 2
    assert plan["calls_per_question"] == plan["calls"] / 2 and plan["tokens_per_question"] > 0
    assert plan["stops"][loop.PLANNER_FAILED.format(error="UnprocessableEntityError")] == 1

    code, out, err = run_cli(capsys, *args, "--no-follow-up")  # one round, nothing sent
    assert code == 0, err
    none = json.loads(out)["planner"]
    assert none | {"max_rounds": 2} == none  # the product's default
    assert (none["mode"], none["calls"], none["rounds"]) == ("none", 0, {"1": 2})
    assert none["stops"] == {loop.NO_PLANNER: 2} and "server" not in none
    assert not none["no_llm_follow_up"]

    code, out, err = run_cli(capsys, *args)  # the default: the no-LLM assessment decides
    assert code == 0, err
    rules = json.loads(out)["planner"]
    assert rules["no_llm_follow_up"] and rules["calls"] == 0
    assert loop.NO_PLANNER not in rules["stops"]


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--planner", "oracle", "error: --planner must be one of none, replay, got 'oracle'"),
    ("--max-rounds", "5", "error: --max-rounds must be a whole number 1..4 (1 turns the "
                          "loop off), got '5'"),
    ("--max-rounds", "two", "error: --max-rounds must be a whole number 1..4 (1 turns the "
                            "loop off), got 'two'"),
])
def test_bad_loop_options_are_one_line(env: None, files: tuple[Path, Path],
                                       capsys: pytest.CaptureFixture[str], option: str,
                                       value: str, message: str) -> None:
    corpus, questions = files
    code, out, err = run_cli(capsys, "eval", "multihop", "--corpus", str(corpus),
                             "--questions", str(questions), option, value)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [message]


def test_retrieval_table_fits_an_80_column_terminal_unclipped() -> None:
    """A narrow terminal (or a console made before COLUMNS was set) neither wraps a system's
    name nor clips a score with an ellipsis."""
    from rich.console import Console

    from ui.cli.eval import RETRIEVAL_KEYS, _retrieval_table

    def row(v: float) -> dict:
        return {k: v for k in RETRIEVAL_KEYS} | {"latency_ms": {"p50": 512.0, "p95": 1237.0}}

    console = Console(width=80)
    with console.capture() as cap:
        console.print(_retrieval_table({"krag": row(0.776),
                                        "baselines": {"dense": row(1.0), "bm25": row(0.5)}}))
    out = cap.get()
    assert "bm25 (baseline)" in out and "dense (baseline)" in out
    assert "…" not in out and ".776" in out and "1.000" in out
    assert "krag 512/1237" in out
    assert max(len(line) for line in out.splitlines()) <= 80
