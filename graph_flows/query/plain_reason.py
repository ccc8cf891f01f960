"""The confidence reason as one plain sentence: what the cited evidence covers, what it lacks.

"The cited passage names Harrowgate Foods and gives Margaret Ellison, a person, as the
answer, in a sentence saying “founded”; another document agrees." or "The cited passage
names POSTGRES, but says “he” where the answer's name should be." The sentence is built
from the signals that decided the label (:class:`graph_flows.query.confidence.Signals`):
the question's names the evidence says and misses (as the question writes them), the
candidate and what kind of thing it is (its entity type), the asked relation its sentence
says or not, a bridge the answer went through, and whether another document agrees. No
counts and no internal terms; at most :data:`MAX_WORDS` words (less telling parts are
left out first, then long names are shortened).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from graph_flows.query import answer_kind, extractive

MAX_WORDS = 30
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_JOIN = re.compile(r"\s+|\s+(?:of|for|the|de|la|le|von|van|du|del|da)\s+(?:the\s+)?|-|\.\s*")
"""What may stand between two words of one name: "Jump for Glory", "Edgar F. Codd"."""
_KIND_NOUNS = {"person": "person or organisation", "date": "date", "time": "time",
               "place": "place", "number": "number or amount", "name": "name"}
_COUNTS = ("", "another document agrees", "two other documents agree",
           "three other documents agree")
DECLINED = "The answer says the knowledge base does not hold the answer."
NOTHING = "Nothing in the knowledge base matched the question."
UNCITED = "The answer cites none of the retrieved facts or passages."


class Signals(Protocol):
    """What the reason reads of :class:`graph_flows.query.confidence.Signals` (the label's
    signals; this module comes before that one in the import order; read-only)."""

    @property
    def covered(self) -> int: ...
    @property
    def names(self) -> int: ...
    @property
    def names_asked(self) -> int: ...
    @property
    def predicate_asked(self) -> int: ...
    @property
    def main_asked(self) -> int: ...
    @property
    def main_said(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def candidate(self) -> str: ...
    @property
    def agree(self) -> int: ...
    @property
    def bridge(self) -> str: ...
    @property
    def reached(self) -> str: ...
    @property
    def declined(self) -> bool: ...
    @property
    def candidate_label(self) -> str: ...
    @property
    def reached_label(self) -> str: ...
    @property
    def pronoun(self) -> str: ...
    @property
    def candidate_repeats(self) -> bool: ...
    @property
    def reached_repeats(self) -> bool: ...


@dataclass(frozen=True)
class Read:
    """What the reason is written from besides the signals: the question, the stems of its
    names the evidence says (``covered``), of its main relation (``main``) and those the
    candidate's sentence says (``said``), and what was cited."""

    query: str
    q: extractive.Question
    covered: frozenset[str]
    main: frozenset[str]
    said: frozenset[str]
    cited: Sequence[dict[str, Any]]


def sentence(s: Signals, r: Read) -> str:
    """The reason of ``s`` (see the module docstring)."""
    if s.declined:
        return DECLINED
    src = source(r.cited)
    missing = phrases(r.query, r.q.names - r.covered)
    if s.names_asked and not s.names:  # the question's names are not repeated: the
        # knowledge base may not know them (a "nothing relevant found" answer says this)
        return f"{src} {_verbs(src)('mention')} none of the names the question asks about."
    if not s.covered:
        return f"{src} {_verbs(src)('share')} no word with the question."
    return fit(_parts(s, r, src, missing), names=[1, 3], optional=[7, 6, 5])


def _parts(s: Signals, r: Read, src: str, missing: list[str]) -> list[str]:
    """The sentence's pieces, always nine: 0-3 what it names and misses (1, 3: name
    lists), 4 what it gives, 5 its type, 6 the relation, 7 agreement, 8 the end; 5-7 may
    be left out (:func:`fit`)."""
    named = phrases(r.query, r.covered & r.q.names)
    v = _verbs(src)
    head = [f"{src} {v('name')} " if named else f"{src} {v('say')} ",
            _and(named) if named else _and(_quoted(r.q, r.q.all & r.covered) or ["its words"]),
            " but not " if missing else "", _or(missing)]
    direct = bool(s.main_said and s.agree)
    if not s.candidate or (s.pronoun and not direct):
        asked = _KIND_NOUNS.get(s.kind, "name")
        end = (f", but {v('say')} “{s.pronoun}” where the answer's name should be"
               if s.pronoun else f", but {v('give')} no {asked} that answers the question")
        return [*head, end, "", "", "", "."]
    if not named:  # the words it says are those of the relation below
        head = [src, "", "", ""]
    then = f"{_comma(missing)} and " if named else " "
    if s.reached and s.main_asked < s.predicate_asked and not direct:  # the bridge decides
        return [*head, f"{then}{v('lead')} through {tidy(s.bridge)} to "
                f"{tidy(s.reached)}", _type(s, s.reached_label).rstrip(","), "", "",
                _fuller(r, s.reached) if s.reached_repeats else "."]
    relation = ""
    if r.main:
        relation = (f", in a sentence saying {_and(_quoted(r.q, r.said))}" if r.said
                    else f", but that sentence does not say {_or(_quoted(r.q, r.main))}")
    agree = ("; no other document confirms it" if not s.agree else
             f"; {_COUNTS[s.agree]}" if s.agree < len(_COUNTS)
             else f"; {s.agree} other documents agree")
    return [*head, f"{then}{v('give')} {tidy(s.candidate)}",
            _type(s, s.candidate_label) + " as the answer", relation, agree,
            _fuller(r, s.candidate) if s.candidate_repeats else "."]


def _fuller(r: Read, mention: str) -> str:
    """The end of a reason whose answer repeats a word of a name the question asks about:
    "; it may be Barry Wesson under a fuller name." """
    shared = r.q.names & extractive.terms(mention)
    asked = [p for p in phrases(r.query, r.q.names) if extractive.terms(p) & shared]
    return f"; it may be {asked[0] if asked else 'a name asked'} under a fuller name."


def _verbs(src: str) -> Callable[[str], str]:
    """A verb agreeing with ``src`` ("The cited passage gives", "The cited passages give")."""
    return (lambda verb: verb) if src.endswith("s") else (lambda verb: verb + "s")


def _comma(missing: Sequence[str]) -> str:
    """A comma before "and gives" after a "but not ..." clause."""
    return "," if missing else ""


def _type(s: Signals, label: str) -> str:
    """``, a person,`` from the mention's entity type; "" for a plain name (a name's type
    says nothing the question asked)."""
    if s.kind == "name" or label not in answer_kind.TYPE_NOUNS:
        return ""
    return f", {answer_kind.TYPE_NOUNS[label]},"


def fit(parts: list[str], names: Sequence[int] = (), optional: Sequence[int] = ()) -> str:
    """``parts`` joined within :data:`MAX_WORDS` words: leaves out the ``optional`` parts
    in order, then keeps one name of each list in ``names``, then clips."""
    parts = list(parts)

    def words() -> int:
        return len("".join(parts).split())

    for i in optional:
        if words() > MAX_WORDS:
            parts[i] = " as the answer" if parts[i].endswith(" as the answer") else ""
    for i in names:
        if words() > MAX_WORDS and parts[i]:
            parts[i] = _clip(re.split(r", | and | or ", parts[i])[0], 5) + " and others"
    text = "".join(parts)
    if len(text.split()) > MAX_WORDS:
        text = " ".join(text.split()[: MAX_WORDS - 1]) + " …"
    return text


def _clip(text: str, n: int) -> str:
    """The first ``n`` words of ``text`` (with "…" when cut)."""
    words = text.split()
    return text if len(words) <= n else " ".join(words[:n]) + "…"


def source(cited: Sequence[dict[str, Any]]) -> str:
    """"The cited passage", "The cited facts", "The cited evidence" (both kinds)."""
    passages = sum("passage_id" in c for c in cited)
    facts = len(cited) - passages
    if passages and facts:
        return "The cited evidence"
    noun = "passage" if passages else "fact"
    return f"The cited {noun}{'s' if len(cited) > 1 else ''}"


def phrases(query: str, stems: frozenset[str]) -> list[str]:
    """The question's names whose stems are in ``stems``, as it writes them: runs of such
    words, joined across the small words inside a name ("Jump for Glory")."""
    out: list[tuple[int, int]] = []
    for m in _WORD.finditer(query):
        word = m.group()
        if (word.lower() in extractive._STOP or extractive.stem(word) not in stems
                or (len(word) == 1 and word.islower())):  # the "s" of "Codd's"
            continue
        if out and _JOIN.fullmatch(query[out[-1][1]:m.start()]):
            out[-1] = (out[-1][0], m.end())
        else:
            out.append((m.start(), m.end()))
    return list(dict.fromkeys(query[a:b] for a, b in out))


def tidy(mention: str) -> str:
    """A mention as a person reads it: a name said twice in a row once ("Abshir Ata
    Waterfall Abshir Ata Waterfall", a title run into its first sentence), without an
    unclosed bracket's tail ("the Opposition (Jamaica")."""
    words = mention.split()
    half = len(words) // 2
    if half and len(words) % 2 == 0 and words[:half] == words[half:]:
        mention = " ".join(words[:half])
    mention = re.sub(r"[’']s$", "", mention)
    if mention.count("(") > mention.count(")"):
        mention = mention[: mention.rindex("(")].rstrip()
    return mention or "(unnamed)"


def _quoted(q: extractive.Question, stems: frozenset[str]) -> list[str]:
    """The question's own words of ``stems``, quoted, in its order (at most three)."""
    return [f"“{w}”" for t, w in q.words.items() if t in stems][:3]


def _and(items: Sequence[str]) -> str:
    return _join(items, "and")


def _or(items: Sequence[str]) -> str:
    return _join(items, "or")


def _join(items: Sequence[str], word: str) -> str:
    """"A", "A and B", "A, B and C"."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {word} " + items[-1]
