"""The no-LLM answer from facts and passages: the best sentences for the question, cited.

Every sentence of the top passages and every top fact is a candidate. A sentence is read
with its *topic*: the title of its passage, or the two ends of its fact (the simplest
coreference: "It was founded in 1987 by ..." in the article "Harrowgate Foods" is about
Harrowgate Foods). Sentences are picked greedily: a candidate scores by the share of the
question's content words that it and its topic cover and the picks so far do not (its
names read from its capitalised words and its topic; the other words only when it names
at least half of the question's names or a bridge name: "founded" said of another company
answers nothing), where the question's *predicate* words ("founded", "born": neither names
nor the kind of thing asked for, "which *company*", "the *company* that") count twice when
the sentence itself says them, since they tell the sentence that answers from one that
only names the subject; plus a small bonus when it holds a possible answer (a name the
question does not contain, or a number for "when"/"how many"), doubled when that stands just
after a predicate word; plus, at half weight, the bridge names it reads (names of retrieved
entities that earlier picks say and the question does not: the bridge of a multi-hop
question, "the founder of X" -> the founder's name); plus a small prior from the rank of
its passage or fact. Each passage gives at most one sentence, and a sentence whose words
the picks so far all said is skipped; a later sentence must name all the question's names,
or add a question or bridge word and name one of the question's names or a bridge name,
and it must be about the answer's chain (:func:`on_chain`: a question's name, or a name an
earlier pick says, the answer or the bridge to it); the first pick leads. Words are compared
by a crude stem (:func:`stem`: founder/founded, use/uses).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Any

from graph_flows.query import answer_kind
from graph_flows.shared.untrusted import MARKER
from storage import request_memo

STEM = 5
TOP_PASSAGES = 3  # passages that may give a sentence
TOP_FACTS = 3  # facts that are candidates beside passages
FACTS_ALONE = 20  # facts that are candidates when there are no passages (recipes split, rrf)
MAX_SENTENCES = 3
BRIDGE_WEIGHT = 0.5
ANSWER_WEIGHT = 0.1
NEAR = 3
RANK_WEIGHT = 0.2
MAX_CHARS = 300
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# a sentence ends at . ! ? before a capital or digit, but not after an initial ("Edgar F. Codd")
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s+(?=[\"“'(\[]?[A-Z0-9])")
SENTENCE_BREAK = _SENTENCE  # where :func:`sentences` cuts (for callers keeping offsets)
_HEADING = re.compile(r"^\s*#{1,6}\s")  # a Markdown heading line: a title, not an answer
_STOP_WORDS = """a an and are as at be been being but by can could did do does for from
had has have he her hers him his how i if in into is it its me my no not of on or our she so
than that the their them then there these they this those to us was we were what when where
which while who whom whose why will with would you your about after before during many much
one ones same some such"""
_STOP = frozenset(_STOP_WORDS.split())
STOP_WORDS = _STOP  # the function words :func:`terms` leaves out
_KIND = re.compile(r"\b(?:which|what|how many|how much)\s+([^\W\d_]+)"
                   r"|\bthe\s+([^\W\d_]+)\s+(?:that|who|which|whose)\b", re.I)
_NUMBER_CUES = re.compile(r"^\s*(when|how (many|much|old|long)|in what year|what year)\b", re.I)


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude English stem: a lower-case word without its inflection (-ing, -ed, -s, -es,
    -ied/-ies as -y, a final -e), cut to :data:`STEM` letters: use/uses/used/using -> "us",
    founded/founder/founding -> "found", studied/study -> "study". Cached (a pure function
    of the word; a question's answer stems ~3,000 words, most of them seen before)."""
    w = word.lower()
    for suffix, keep, instead in (("ied", 2, "y"), ("ies", 2, "y"), ("ing", 2, ""),
                                  ("ed", 2, ""), ("es", 3, ""), ("s", 3, "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= keep and not w.endswith("ss"):
            w = w[: -len(suffix)] + instead
            break
    if len(w) > 2 and w.endswith("e"):
        w = w[:-1]
    return w[:STEM]


_TERMS = object()  # the request memo's key of terms()


def terms(text: str) -> frozenset[str]:
    """Content-word stems of ``text`` (no stop words). Kept for the read-only request
    (storage.request_memo): a request reads the same passages and facts again in each
    round, for the answer, its label and its diagram: 64 % of the calls of 30 MuSiQue
    questions (`kag_query`, the loop) were repeats."""
    key = (_TERMS, text := str(text))
    found: frozenset[str] | None = request_memo.peek(key)
    if found is None:
        found = frozenset(stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP)
        request_memo.keep(key, found)
    return found


@dataclass(frozen=True)
class Question:
    """A question's content-word stems: ``names`` (of the things it is about: capitalised
    words after the first, numbers, the analysis' entity names) and ``other`` (the
    predicate and the rest); ``words`` maps a stem to the word the question wrote."""

    names: frozenset[str]
    other: frozenset[str]
    words: dict[str, str]
    wants_number: bool = False
    kind: frozenset[str] = frozenset()
    """The answer's or a bridge's kind ("Which *company* ...", "how many *shops*", "the
    *company* that ..."): not a predicate."""

    @property
    def predicate(self) -> frozenset[str]:
        """The other words but the answer's kind."""
        return self.other - self.kind

    @property
    def all(self) -> frozenset[str]:
        """Every content-word stem of the question."""
        return self.names | self.other


def question(query: str, entity_names: Iterable[str] = ()) -> Question:
    """Split ``query`` into name and other stems (see :class:`Question`)."""
    tokens = _WORD.findall(query)
    words = {stem(w): w for w in tokens if w.lower() not in _STOP}
    named = {stem(w) for i, w in enumerate(tokens)
             if (i > 0 and w[0].isupper()) or w[0].isdigit()}
    for name in entity_names:
        named |= terms(name)
    names = frozenset(named) & frozenset(words)
    kind = frozenset(stem(w) for m in _KIND.findall(query) for w in m if w) - names
    return Question(names, frozenset(words) - names, words, bool(_NUMBER_CUES.search(query)),
                    kind)


def paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text``: lines joined, split at blank lines and at Markdown heading
    lines, which are left out (a title is not an answer)."""
    out: list[str] = []
    block: list[str] = []
    for line in [*str(text).splitlines(), ""]:
        if line.strip() and not _HEADING.match(line):
            block.append(line)
            continue
        if block:
            out.append(" ".join(" ".join(block).split()))
            block = []
    return out


def sentences(text: str, limit: int | None = MAX_CHARS) -> list[str]:
    """``text`` cut into sentences, paragraph by paragraph (each clipped to ``limit``
    characters when given)."""
    out = []
    for para in paragraphs(text):
        for s in _SENTENCE.split(para):
            s = s.strip()
            if s:
                out.append(s if limit is None or len(s) <= limit else s[: limit - 1] + "…")
    return out


@dataclass(frozen=True)
class Candidate:
    """A sentence that may answer: its rank, text, citation label, own words, topic words."""

    rank: int
    sentence: str
    label: str
    words: frozenset[str]
    topic: frozenset[str]

    @property
    def reads(self) -> frozenset[str]:
        """What the sentence is read as saying: its words and its topic's."""
        return self.words | self.topic

    @cached_property
    def named(self) -> frozenset[str]:
        """The names it reads: its capitalised words and numbers, and its topic (read once
        per candidate: the picks ask again for every sentence chosen)."""
        return self.topic | frozenset(
            stem(w) for w in _WORD.findall(self.sentence)
            if (w[0].isupper() or w[0].isdigit()) and w.lower() not in _STOP)


def fact_topic(fact: dict[str, Any]) -> frozenset[str]:
    """A fact's topic: the names of its two ends."""
    return terms(f"{fact.get('subject', '')} {fact.get('object', '')}")


def candidates(facts: Sequence[dict[str, Any]], passages: Sequence[dict[str, Any]],
               ) -> list[Candidate]:
    """Every sentence of the top passages, then the top facts (all retrieved facts when
    there are no passages); a sentence given twice counts once, at its first place, with
    the topics of all its places (one sentence is often the text of several facts). A
    sentence holding a withheld span's marker is no answer."""
    out = [Candidate(rank, s, p["label"], terms(s), terms(p.get("title") or ""))
           for rank, p in enumerate(passages[:TOP_PASSAGES]) for s in sentences(p.get("text", ""))
           if MARKER[:10] not in s]
    top = facts[:TOP_FACTS if passages else FACTS_ALONE]
    out += [Candidate(rank, " ".join(f["fact"].split()), f["label"], terms(f["fact"]),
                      fact_topic(f)) for rank, f in enumerate(top)]
    first: dict[str, Candidate] = {}
    for c in out:
        seen = first.setdefault(c.sentence, c)
        if seen is not c:
            first[c.sentence] = replace(seen, topic=seen.topic | c.topic)
    return list(first.values())


def _answer_bonus(c: Candidate, q: Question) -> float:
    """:data:`ANSWER_WEIGHT` when the sentence holds a possible answer: a number (for
    "when"/"how many"), else a capitalised word (not the first) the question does not
    contain; twice that when it stands within :data:`NEAR` words after one of
    the question's predicate words ("born in *Lagos*", "completed in *1864*")."""
    tokens = _WORD.findall(c.sentence)
    spots = [i for i, t in enumerate(tokens) if (
        t[0].isdigit() if q.wants_number else (i > 0 and t[0].isupper())
    ) and stem(t) not in q.all]
    if not spots:
        return 0.0
    verbs = [i for i, t in enumerate(tokens) if stem(t) in q.predicate]
    near = any(0 < s - v <= NEAR for s in spots for v in verbs)
    return ANSWER_WEIGHT * (1 + near)


def _gain(c: Candidate, q: Question, covered: frozenset[str], bridge: frozenset[str]
          ) -> tuple[float, float]:
    """(score, what it adds in question and bridge words) of ``c`` given the picks so far."""
    open_terms = q.all - covered
    said = len(c.named & open_terms & q.names)
    if _about(c, q, bridge):
        said += len(c.reads & open_terms & q.other) + len(c.words & open_terms & q.predicate)
    bridged = len(c.named & bridge - covered) / max(len(bridge), 1)
    adds = said / max(len(q.all), 1) + BRIDGE_WEIGHT * bridged
    score = adds + _answer_bonus(c, q) + RANK_WEIGHT / (1 + c.rank)
    return score, adds


def _about(c: Candidate, q: Question, bridge: frozenset[str]) -> bool:
    """Whether the sentence is about what the question asks: it names at least half of the
    question's names (capitalised, or by its topic) or a bridge name, or the question names
    nothing. Only then do the question's other words count for it ("founded" said of
    another company answers nothing)."""
    hits = len(c.named & q.names)
    return not q.names or (hits > 0 and 2 * hits >= len(q.names)) or bool(c.named & bridge)


def _supports(c: Candidate, adds: float, q: Question, bridge: frozenset[str]) -> bool:
    """Whether a sentence may follow the lead: it names every thing the question names, or
    it adds a question or bridge word and names one of the question or a bridge name
    (any word when the question names nothing)."""
    if q.names and q.names <= c.named:
        return True
    return adds > 0 and (not q.names or bool(c.named & (q.names | bridge)))


CONNECTORS = frozenset({"of", "the", "for", "de", "von", "van"})
"""Lower-case words a name may hold between capitalised ones ("University of Kansas")."""


def name_runs(sentence: str, numbers: bool = False) -> list[str]:
    """The names a sentence writes: runs of capitalised words (not stop words) with only
    spaces between them, joined by a :data:`CONNECTORS` word ("Donald Chamberlin", "Battle
    of the Osage"); a sentence's first word only as part of a longer run (any sentence
    starts capitalised); numbers too when ``numbers`` (a date or number is asked)."""
    runs: list[list[str]] = []
    tail: list[str] = []  # connectors after the current run, kept if a name follows
    end = -1
    for i, m in enumerate(_WORD.finditer(sentence)):
        w = m.group()
        named = (w[0].isupper() and w.lower() not in _STOP) or (numbers and w[0].isdigit())
        joined = end >= 0 and not sentence[end:m.start()].strip()
        if named and runs and joined:
            runs[-1] += [*tail, w]
        elif named:
            runs.append([w] if i else ["", w])
        tail = [*tail, w] if not named and joined and w in CONNECTORS and runs else []
        end = m.end() if named or tail else -1
    return [" ".join(r).strip() for r in runs if r[0] or len(r) > 2]


def said_names(c: Candidate, q: Question, kind: str) -> list[frozenset[str]]:
    """The names sentence ``c`` itself says (not its topic) that the question does not
    hold (:func:`name_runs`; numbers when the ``kind`` of answer asked is a date or a
    number), each as its word stems."""
    found = name_runs(c.sentence, numbers=kind in answer_kind.COUNTED)
    return [n for n in map(terms, found) if n - q.all]


def on_chain(c: Candidate, q: Question, linked: Sequence[frozenset[str]]) -> bool:
    """Whether a supporting sentence is about the answer's chain: it names one of the
    question's names (by its words or its topic), or a ``linked`` name (one an earlier pick
    says: the answer, or the bridge that leads to it): it says every word of that name, or
    its topic is mostly that name (a passage titled "Lake District" after "the English Lake
    District"; not a document title that only holds some of its words), or it restates the
    rest of the question (:func:`_restates`). A question that names nothing gives no
    anchor: any sentence may follow."""
    if not q.names or c.named & q.names or _restates(c, q):
        return True
    return any(n <= c.words or _titled(n, c.topic, q) for n in linked)


def _restates(c: Candidate, q: Question) -> bool:
    """Whether the sentence says every other word of the question (its relation and the
    kind asked): then it is about the asked thing even where it names it by a pronoun or a
    description ("the company agreed to buy the startup Tidewell" for "Which startup did
    Quillpoint agree to buy?"). A sentence about another thing rarely restates all of it."""
    return len(q.other) >= 2 and q.other <= c.words


def _titled(name: frozenset[str], topic: frozenset[str], q: Question) -> bool:
    """Whether ``topic`` is mostly ``name``: they share a word the question does not hold,
    and more than half of the topic's words."""
    shared = name & topic
    return bool(shared - q.all) and 2 * len(shared) > len(topic)


def pick(query: str, facts: Sequence[dict[str, Any]], passages: Sequence[dict[str, Any]],
         limit: int = MAX_SENTENCES, entity_names: Iterable[str] = ()) -> list[Candidate]:
    """Sentences to answer with, best first, chosen greedily (see the module docstring)."""
    q = question(query, entity_names)
    names = [terms(n) for f in facts for n in (f.get("subject", ""), f.get("object", ""))]
    names += [terms(p.get("title") or "") for p in passages[:TOP_PASSAGES]]
    pool = candidates(facts, passages)
    kind = answer_kind.asked_kind(query)
    covered: frozenset[str] = frozenset()
    bridge: frozenset[str] = frozenset()
    used: set[str] = set()
    said: frozenset[str] = frozenset()
    linked: list[frozenset[str]] = []
    out: list[Candidate] = []
    while pool and len(out) < limit:
        scored = [(_gain(c, q, covered, bridge), c) for c in pool
                  if c.label not in used and not c.words <= said]
        if not scored:
            break
        if out:
            scored = [(g, c) for g, c in scored
                      if _supports(c, g[1], q, bridge) and on_chain(c, q, linked)]
            if not scored:
                break
        (_, adds), best = max(scored, key=lambda sc: sc[0][0])
        linked += said_names(best, q, kind)
        out.append(best)
        pool.remove(best)
        covered |= best.reads & (q.all | bridge)
        said |= best.words
        bridge |= frozenset().union(*(n for n in names if n and n <= best.words)) - q.all
        if best.label.startswith("P"):
            used.add(best.label)
    return out
