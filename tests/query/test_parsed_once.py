"""One spaCy parse per text per request (issue 43): the confidence label and the answer's
diagram read the same question and sentences; a parse does not depend on its batch."""

from __future__ import annotations

from typing import Any

import pytest

from graph_flows.query import answer_kind
from graph_flows.shared.nlp import load_nlp

TEXTS = ["Who founded the company that published Journal of Psychotherapy Integration?",
         "The American Psychological Association published it in Washington in 1991.",
         "G. Stanley Hall was its first president."]


def _signature(doc: Any) -> list[tuple[Any, ...]]:
    return [(t.text, t.dep_, t.head.i, t.tag_, t.ent_type_, t.ent_iob_) for t in doc]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    nlp = load_nlp()
    if nlp is None:
        pytest.skip("the spaCy model is not installed")
    parsed: list[str] = []
    pipe = nlp.pipe

    def counting(texts: Any, *args: Any, **kwargs: Any) -> Any:
        texts = list(texts)
        parsed.extend(texts)
        return pipe(texts, *args, **kwargs)

    monkeypatch.setattr(nlp, "pipe", counting)
    return parsed


def test_within_a_request_each_text_is_parsed_once(counted: list[str]) -> None:
    with answer_kind.parsed_once():
        first = answer_kind.parse(TEXTS)
        again = answer_kind.parse([TEXTS[2], TEXTS[0], TEXTS[2]])
        mentions = answer_kind.read(TEXTS[1])
    assert counted == TEXTS
    assert again[0] is first[2] and again[1] is first[0] and again[2] is first[2]
    assert any(m.label == "ORG" for m in mentions)


def test_outside_a_request_nothing_is_kept(counted: list[str]) -> None:
    with answer_kind.parsed_once():
        answer_kind.parse(TEXTS[:1])
    answer_kind.parse(TEXTS[:1])
    answer_kind.parse(TEXTS[:1])
    assert counted == TEXTS[:1] * 3


def test_a_parse_does_not_depend_on_its_batch() -> None:
    nlp = load_nlp()
    if nlp is None:
        pytest.skip("the spaCy model is not installed")
    alone = [_signature(nlp(t)) for t in TEXTS]
    batched = [_signature(d) for d in nlp.pipe(TEXTS[::-1])][::-1]
    assert batched == alone
