"""Is an entity name a fragment of a sentence rather than a name?

One definition for everything that judges names: the answer's diagram measure
(``krag eval multihop``'s ``diagram.fragment_names_share``), the count of fragments in a
stored graph, and the no-LLM extractor's filter. A name is a fragment when

- its first or last word is a lower-case function word (``the``, ``of``, ``its``, ``own``:
  a closed grammatical class, see :data:`FUNCTION_WORDS`), as in "Mother of", "Revolt of
  the", "own query language". A capitalised first or last word is kept: title case
  capitalises function words inside real names ("The Hague", "Stand By Me");
- its last word is a lower-case participle of a verb of naming (``called``, ``named``,
  :data:`NAMING_PARTICIPLES`): such a verb needs the name as its complement, so a phrase
  ending with it was cut before the name ("query language called");
- it ends with a possessive ("Codd's"), or is only a function word ("The", "its"; an
  acronym spelled like one is a name: "US", "WHO", "IT");
- it is a bare number (digits and separators) that is not the answer ("1992" as a node);
- its quotes or brackets are unbalanced (``Data Banks" in Co``).

Why it holds beyond one corpus: the classes are English grammar's closed classes
(determiners, possessive determiners, prepositions, conjunctions, pronouns), not words seen
in a sample, and a real name rarely starts or ends with one in lower case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


DETERMINERS = _words("a an the this that these those each every some any no both either "
                     "neither another such")
POSSESSIVES = _words("my your his her its our their whose own")
PREPOSITIONS = _words(
    "of in on at by for with from to into onto upon about above across after against along "
    "among around before behind below beneath beside besides between beyond despite during "
    "except inside near off out outside over per since through throughout till toward "
    "towards under until up via within without")
CONJUNCTIONS = _words("and or but nor yet as if than whether while because although though "
                      "when where whereas unless")
PRONOUNS = _words("i me he him she it they them we us you who whom which what")
FUNCTION_WORDS = DETERMINERS | POSSESSIVES | PREPOSITIONS | CONJUNCTIONS | PRONOUNS
"""English function words: the closed classes a name does not start or end with."""
NAMING_PARTICIPLES = _words("called named termed dubbed titled entitled nicknamed")
"""Participles of the verbs of naming, whose complement is the name itself."""

_WORD = re.compile(r"[\w'’.-]+", re.UNICODE)
_NUMBER = re.compile(r"[\d\s.,:/–—-]+")
_POSSESSIVE = re.compile(r"\w(?:['’]s|s['’])$", re.UNICODE)
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("“", "”"))


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", text.casefold()).split())


def unbalanced(name: str) -> bool:
    """Quotes or brackets that open without closing (or close without opening)."""
    if name.count('"') % 2:
        return True
    return any(name.count(a) != name.count(b) for a, b in _PAIRS)


def is_number(name: str) -> bool:
    """Digits and separators only ("1992", "3,000", "1914–1918")."""
    flat = name.strip()
    return bool(flat) and any(c.isdigit() for c in flat) and bool(_NUMBER.fullmatch(flat))


def _acronym(word: str) -> bool:
    """All capitals, two or more letters ("US", "WHO", "IT"): a name, not a function word."""
    return word.isupper() and sum(c.isalpha() for c in word) >= 2


def is_fragment(name: str, answers: Iterable[str] = ()) -> bool:
    """True when ``name`` reads as a piece of a sentence, not a name (module docstring).
    A bare number is a fragment unless it is one of ``answers`` (case and punctuation
    folded)."""
    flat = " ".join(str(name).split())
    if not flat:
        return True
    if unbalanced(flat):
        return True
    if is_number(flat):
        return _fold(flat) not in {_fold(a) for a in answers if a}
    words = _WORD.findall(flat)
    if not words:
        return True
    first, last = words[0], words[-1]
    if first.islower() and first in FUNCTION_WORDS:
        return True
    if last.islower() and (last in FUNCTION_WORDS or last in NAMING_PARTICIPLES):
        return True
    if len(words) == 1 and first.casefold() in FUNCTION_WORDS and not _acronym(first):
        return True
    return bool(_POSSESSIVE.search(flat))


def fragment_share(names: Iterable[str], answers: Iterable[str] = ()) -> tuple[int, int]:
    """(fragments, names) over ``names``."""
    kept = list(answers)
    seen = [str(n) for n in names]
    return sum(is_fragment(n, kept) for n in seen), len(seen)
