"""The query's spaCy parse (issue 43, CPU per question): it skips the attribute ruler and
works out the part of speech from the ruler's own patterns where asked, with the full
pipeline's result; and it does not look thinc's backend up again in each new thread."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from graph_flows.query import answer_kind, answer_slot, asked_relation
from graph_flows.shared.nlp import lazy_ruler, load_nlp

SENTENCES = [
    # the tag map (VBD -> VERB), a word-and-tag rule (is/VBZ -> AUX) and the later
    # two-token rule that overrides it (expletive "there" + "is" -> VERB)
    "There is a castle in the town that Henry built in 1066.",
    "Who founded the company that published Journal of Psychotherapy Integration?",
    # rules on the parser's labels: "did" as aux (AUX), "do"/"have" as a root (VERB),
    # "that" as a pronoun (PRON) or a subordinating "mark" (SCONJ)
    "What did the director of Jump for Glory do after he had finished that?",
    "She said that they have a house in Kent, and it was not theirs.",
    "Whom did the founder of Apple marry in 1991, while he was in California?",
    "The film was directed by Raoul Walsh and its music isn't memorable.",
    "When did the country containing Nugegoda leave the British Empire?",
    # what fills the asked place of "founded": a pronoun, a passive's agent
    "In 1892 he founded the American Psychological Association at Clark University.",
    "The association was founded by G. Stanley Hall, who was its first president.",
]
SPACED = ["Paris  is the capital of France.", "It was founded\nin 1066 by William."]
"""Whitespace tokens: the ruler changes their tag and label, so these get the whole ruler."""


def _nlp() -> Any:
    nlp = load_nlp()
    if nlp is None or lazy_ruler() is None:
        pytest.skip("the spaCy model is not installed")
    return nlp


def _full(texts: list[str]) -> list[Any]:
    return list(_nlp().pipe(texts))


def test_the_part_of_speech_is_the_full_pipelines_without_running_the_ruler() -> None:
    full, ours = _full(SENTENCES), answer_kind.parse(SENTENCES)
    for a, b in zip(full, ours, strict=True):
        assert not b.has_annotation("POS")  # the ruler did not run on this parse
        assert [answer_kind.pos(t) for t in b] == [t.pos_ for t in a]
        assert [(t.tag_, t.dep_, t.head.i) for t in b] == [(t.tag_, t.dep_, t.head.i) for t in a]
        assert [(e.start, e.end, e.label_) for e in b.ents] == [
            (e.start, e.end, e.label_) for e in a.ents]
    there = ours[0]
    assert [answer_kind.pos(t) for t in there[:2]] == ["PRON", "VERB"]  # not "AUX": later wins


def test_a_parse_with_whitespace_tokens_gets_the_whole_ruler() -> None:
    full, ours = _full(SPACED), answer_kind.parse(SPACED)
    for a, b in zip(full, ours, strict=True):
        assert any(t.is_space for t in b) and b.has_annotation("POS")
        assert [(t.pos_, t.tag_, t.dep_, t.head.i) for t in b] == [
            (t.pos_, t.tag_, t.dep_, t.head.i) for t in a]
        assert [answer_kind.pos(t) for t in b] == [t.pos_ for t in a]


def test_the_readers_of_the_part_of_speech_read_the_same() -> None:
    full, ours = _full(SENTENCES), answer_kind.parse(SENTENCES)
    for q, a, b in zip(SENTENCES, full, ours, strict=True):
        relation = frozenset(answer_kind._WORD.findall(q.lower()))
        assert asked_relation.main_relation(q, relation, b) == asked_relation.main_relation(
            q, relation, a)
        slot = answer_slot.asked_slot(q, b)
        assert slot == answer_slot.asked_slot(q, a)
        assert [answer_slot.fill(slot, s, d) for s, d in zip(SENTENCES, ours, strict=True)] == [
            answer_slot.fill(slot, s, d) for s, d in zip(SENTENCES, full, strict=True)]
    filled = [answer_slot.fill(answer_slot.asked_slot(SENTENCES[1]), s, d)
              for s, d in zip(SENTENCES[-2:], ours[-2:], strict=True)]
    assert filled == [answer_slot.Filled(pronoun="he"),
                      answer_slot.Filled(phrase="G. Stanley Hall")]


def test_a_new_thread_does_not_look_up_thincs_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    _nlp()
    import thinc.backends

    looked: list[str] = []
    get_ops = thinc.backends.get_ops

    def counting(name: str, **kwargs: Any) -> Any:
        looked.append(name)
        return get_ops(name, **kwargs)

    monkeypatch.setattr(thinc.backends, "get_ops", counting)
    for text in SENTENCES[:2]:  # a new thread starts with no current ops (a context variable)
        worker = threading.Thread(target=answer_kind.parse, args=([text],))
        worker.start()
        worker.join()
    assert looked == []
