"""The relation a sentence states between two things it names, as an edge label.

When no stored fact joins two links of an answer's chain (the question's entity and the
bridge a follow-up found, or either of them and an answer that is no stored entity: "a
1999 survey", "three"), the sentence that names both says how they relate: "Brightmoor was
founded by the Reyes family" joins Brightmoor to the Reyes family by "was founded by".
:func:`link` reads that as the words between the two mentions, the first-named one first
(the edge runs in reading order), with punctuation and function words at the ends trimmed
("Ingres, which uses QUEL" gives "uses"), in at most :data:`MAX_WORDS` words.

Why it holds on other text: in an English declarative sentence the predicate (verb phrase,
preposition or copula with its complement head) stands between the two arguments it
relates, so the text between two mentions is the relation the sentence states between
them; no word list of a corpus is involved (the trimmed words are English's closed
function-word classes, :data:`graph_flows.shared.fragments.FUNCTION_WORDS`, plus relative
pronouns).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from graph_flows.shared.fragments import CONJUNCTIONS, DETERMINERS, PRONOUNS

MAX_WORDS = 8  # a longer gap is no single relation: no edge
_TRIM_LEFT = CONJUNCTIONS | PRONOUNS | {"that"}  # "..., which was directed by" -> "was ..."
_TRIM_RIGHT = DETERMINERS | CONJUNCTIONS
_WORD = re.compile(r"[^\W_]", re.UNICODE)
_EDGE_PUNCT = " \t,;:.!?()[]{}\"'“”‘’—–-"


class Link(NamedTuple):
    """Two names a sentence relates: ``first`` (named first), the relation ``text`` between
    them, ``second``, and the ``sentence`` it was read from."""

    first: str
    text: str
    second: str
    sentence: str


def spans(sentence: str, name: str) -> list[tuple[int, int]]:
    """Where ``name`` is said in ``sentence`` (case-insensitive, whole words, spacing
    folded), in order; none when it is not."""
    words = str(name).split()
    if not words or not _WORD.search(name):
        return []
    if sentence.isascii() and all(w.isascii() for w in words):
        return _ascii_spans(sentence, [w.lower() for w in words])
    pattern = r"\s+".join(re.escape(w) for w in words)
    return [(m.start(), m.end())
            for m in re.finditer(rf"(?<![\w]){pattern}(?![\w])", sentence, re.IGNORECASE)]


def _ascii_spans(sentence: str, words: list[str]) -> list[tuple[int, int]]:
    """:func:`spans` of lower-cased ``words`` in an ASCII ``sentence``, without compiling
    a pattern per name (compiling was most of the time a diagram spends reading its
    sentences): the matches of the regular expression there, ``(?<!\\w)w1\\s+w2…(?!\\w)``
    ignoring case, found left to right without overlap. In ASCII, ignoring case is
    comparing lower-cased text, ``\\w`` a letter, a digit or "_", ``\\s`` whitespace."""
    text = sentence.lower()
    if any(w not in text for w in words):
        return []
    out: list[tuple[int, int]] = []
    at = text.find(words[0])
    while at >= 0:
        end = _match_at(text, words, at)
        if end is None:
            at = text.find(words[0], at + 1)
        else:
            out.append((at, end))
            at = text.find(words[0], end)
    return out


def _match_at(text: str, words: list[str], at: int) -> int | None:
    """The end of ``words`` matched at ``at`` (whole words, whitespace between), or None."""
    if at > 0 and _is_word(text[at - 1]):
        return None
    end = at + len(words[0])
    for word in words[1:]:
        gap = end
        while end < len(text) and text[end].isspace():
            end += 1
        if end == gap or not text.startswith(word, end):
            return None
        end += len(word)
    return None if end < len(text) and _is_word(text[end]) else end


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def relation(gap: str) -> str:
    """The relation text of the words between two mentions (module docstring); "" when it
    holds no word, more than :data:`MAX_WORDS`, or names something else (a capitalised
    word or a number: another argument stands between, "starring Robert De Niro, Morgan
    Freeman")."""
    words = [w.strip(_EDGE_PUNCT) for w in gap.replace("—", " ").split()]
    words = [w for w in words if w]
    while words and words[0].casefold() in _TRIM_LEFT:
        words = words[1:]
    while words and words[-1].casefold() in _TRIM_RIGHT:
        words = words[:-1]
    if not words or len(words) > MAX_WORDS or not any(_WORD.search(w) for w in words):
        return ""
    if any(w[0].isupper() or any(c.isdigit() for c in w) for w in words):
        return ""
    return " ".join(words)


def link(sentence: str, a: str, b: str) -> Link | None:
    """The relation ``sentence`` states between ``a`` and ``b`` (module docstring), read
    between their closest two mentions; None when it does not name both apart or says no
    relation between them."""
    pairs = [(x, y) for x in spans(sentence, a) for y in spans(sentence, b)
             if x[1] <= y[0] or y[1] <= x[0]]  # apart, not one inside the other
    if not pairs:
        return None
    x, y = min(pairs, key=lambda p: max(p[0][0], p[1][0]) - min(p[0][1], p[1][1]))
    first, (gap_from, gap_to) = (a, (x[1], y[0])) if x[0] < y[0] else (b, (y[1], x[0]))
    text = relation(sentence[gap_from:gap_to])
    if not text:
        return None
    return Link(first, text, b if first == a else a, sentence)


def first_link(sentences: Iterable[str], a: str, b: str) -> Link | None:
    """:func:`link` of the first of ``sentences`` that relates ``a`` and ``b``."""
    for sentence in sentences:
        found = link(sentence, a, b)
        if found is not None:
            return found
    return None
