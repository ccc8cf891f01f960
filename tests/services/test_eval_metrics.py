"""Scoring functions of the quality harness on hand-computed cases."""

from __future__ import annotations

import pytest

from graph_flows.services.evaluation import metrics as m


def test_recall_all_supported_and_reciprocal_rank() -> None:
    ranked = ["a", "x", "b", "y", "z", "c"]
    gold = ["b", "c"]
    assert m.recall_at(ranked, gold, 2) == 0.0
    assert m.recall_at(ranked, gold, 5) == 0.5
    assert m.recall_at(ranked, gold, 10) == 1.0
    assert not m.all_supported(ranked, gold, 5) and m.all_supported(ranked, gold, 10)
    assert m.reciprocal_rank(ranked, gold) == pytest.approx(1 / 3)
    assert m.reciprocal_rank(ranked, ["q"]) == 0.0
    assert m.recall_at(ranked, [], 5) == 0.0


def test_answer_in_folds_case_and_whitespace() -> None:
    assert m.answer_in("founded by  O. MARTA\nBrennick in 1892", ["o. marta brennick"])
    assert m.answer_in("Marta Brennick", ["O. Marta Brennick", "Marta Brennick"])
    assert not m.answer_in("Brennick", ["Marta Brennick", "  "])


def test_percentile_interpolates_like_numpy() -> None:
    values = [40.0, 10.0, 30.0, 20.0]
    assert m.percentile(values, 50) == 25.0
    assert m.percentile(values, 95) == pytest.approx(38.5)
    assert m.percentile([7.0], 95) == 7.0 and m.percentile([], 50) == 0.0


def test_prf() -> None:
    assert m.prf(2, 4, 8) == {"P": 0.5, "R": 0.25, "F1": 0.3333}
    assert m.prf(0, 0, 3) == {"P": 0.0, "R": 0.0, "F1": 0.0}


def test_retrieval_score_averages_questions() -> None:
    score = m.RetrievalScore()
    score.add(["g1", "g2"], ["g1", "g2"], True, 10.0)
    score.add(["x", "y", "g3"], ["g3", "g4"], False, 30.0)
    out = score.as_dict()
    assert out == {"R@2": 0.5, "R@5": 0.75, "R@10": 0.75, "AllSupp@10": 0.5,
                   "MRR": pytest.approx(0.6667), "Ans@ctx": 0.5,
                   "latency_ms": {"p50": 20.0, "p95": 29.0}}
    answering = m.RetrievalScore()
    answering.add(["g1"], ["g1"], True, 1.0, answer_in_answer=True)
    answering.add(["g1"], ["g1"], True, 1.0, answer_in_answer=False)
    assert answering.as_dict()["Ans@answer"] == 0.5  # only for a system that answers
