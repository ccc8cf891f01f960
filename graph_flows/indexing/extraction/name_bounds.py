"""Where a name begins and ends: a mention's span cut down to the name it holds (issue 40).

NER spans, capitalised-word runs, lower-case object phrases and the names an LLM sends can
carry pieces of the sentence around the name: a function word at either end ("the Semantic
Web in"), a verb of naming whose complement was cut off ("query language called"), the half
of a quotation ('Data Banks" in Communications of the ACM'). :func:`trim_span` cuts them
off with the grammar of :mod:`graph_flows.shared.fragments`, repeating until nothing moves:

1. Spaces and separators (``, ; :``) leave both ends.
2. At an unbalanced quote or bracket the span is cut: the part before it stays when it holds
   a letter or digit (the mention ran past a title's closing quote, or into a parenthesis),
   else the part after it (the mention began with the opening mark).
3. A lower-case function word (determiner, possessive including "own", preposition,
   conjunction, pronoun) leaves either end, a lower-case participle of a verb of naming the
   end. Capitalised ones stay: title case capitalises them inside names ("The Hague").

Why it holds beyond one corpus: the marks and word classes are English punctuation and
closed grammatical classes, and a name is a noun phrase that neither begins nor ends with
them in lower case. What is still a fragment afterwards (:func:`is_fragment`) is no name
(:func:`is_junk`), except a bare number (a date or year: a value the graph keeps, never a
piece of a name) and a possessive ending ("McDonald's" is a name).
"""

from __future__ import annotations

import re

from graph_flows.shared.fragments import (
    DETERMINERS,
    FUNCTION_WORDS,
    NAMING_PARTICIPLES,
    POSSESSIVES,
    is_fragment,
    is_number,
    unbalanced,
)

_EDGE = frozenset(" \t\n,;:")
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("“", "”"))
_WORD = re.compile(r"[\w'’.-]+", re.UNICODE)
_POSSESSIVE = re.compile(r"\w(?:['’]s|s['’])$", re.UNICODE)
_CLITIC = re.compile(r"\s*['’]\w")
_PREDICATE_HEAD = re.compile(r"^[\W_]+")
_PREDICATE_TAIL = re.compile(r"[^\w)\]]+$")
_PREDICATE_EDGES = re.compile(r"^[\W_]+|[\W_]+$")


def trim_span(text: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """``[start, end)`` of ``text`` cut down to the name it holds (module docstring), or None
    when no letter or digit is left."""
    end = len(text) if end is None else end
    while True:
        span = _drop_words(text, *_balance(text, *_strip(text, start, end)))
        if span == (start, end):
            break
        start, end = span
    if start >= end or not any(c.isalnum() for c in text[start:end]):
        return None
    return start, end


def trim_name(name: str) -> str:
    """``name`` cut down by :func:`trim_span` ('' when nothing is left)."""
    span = trim_span(name)
    return name[span[0] : span[1]] if span else ""


def is_junk(name: str) -> bool:
    """True when ``name`` is a fragment (:func:`is_fragment`) that is neither a bare number
    nor a name ending in a possessive."""
    return is_fragment(name) and not is_number(name) and not _POSSESSIVE.search(name.strip())


def trim_predicate(phrase: str) -> str:
    """A relation text as stated, without punctuation at its ends (", was based on" -> "was
    based on"; a closing bracket that closes stays) and without a determiner or possessive
    determiner at its end ("described the" -> "described"): a predicate is a verb phrase,
    which ends with its verb, particle or preposition, never with the article of its
    object. '' when a clitic without its host begins it ("'s", "'ll be") or fewer than two
    letters or digits are left."""
    if _CLITIC.match(phrase):
        return ""
    phrase = _PREDICATE_TAIL.sub("", _PREDICATE_HEAD.sub("", phrase))
    if unbalanced(phrase):
        phrase = _PREDICATE_EDGES.sub("", phrase)
    words = phrase.split()
    while len(words) > 1 and words[-1] in DETERMINERS | POSSESSIVES:
        words.pop()
    phrase = " ".join(words)
    return phrase if sum(c.isalnum() for c in phrase) >= 2 else ""


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    """Spaces and separators off both ends."""
    while start < end and text[start] in _EDGE:
        start += 1
    while end > start and text[end - 1] in _EDGE:
        end -= 1
    return start, end


def _balance(text: str, start: int, end: int) -> tuple[int, int]:
    """Cut at the first unbalanced quote or bracket, keeping the side with the name."""
    cut = _unbalanced(text, start, end)
    if cut is None:
        return start, end
    if any(c.isalnum() for c in text[start:cut]):
        return start, cut
    return cut + 1, end


def _unbalanced(text: str, start: int, end: int) -> int | None:
    """Position of the first quote or bracket in ``[start, end)`` without its partner. A
    straight double quote closes when the text before the span holds an odd number of them
    (the span began inside a quotation), else the last one of an odd count opens."""
    found: list[int] = []
    quotes = [i for i in range(start, end) if text[i] == '"']
    if len(quotes) % 2:
        found.append(quotes[0] if text.count('"', 0, start) % 2 else quotes[-1])
    for opener, closer in _PAIRS:
        stack: list[int] = []
        for i in range(start, end):
            if text[i] == opener:
                stack.append(i)
            elif text[i] == closer:
                if not stack:
                    found.append(i)
                    break
                stack.pop()
        found.extend(stack[:1])
    return min(found) if found else None


def _drop_words(text: str, start: int, end: int) -> tuple[int, int]:
    """A lower-case function word off either end, a naming participle off the end."""
    words = list(_WORD.finditer(text, start, end))
    if not words:
        return start, end
    first, last = words[0], words[-1]
    if first.start() == start and _function_word(first.group()):
        return first.end(), end
    if last.end() == end and (_function_word(last.group())
                              or last.group() in NAMING_PARTICIPLES):
        return start, last.start()
    return start, end


def _function_word(word: str) -> bool:
    """A lower-case English function word ("the", "of", "its", "own")."""
    return word.islower() and word in FUNCTION_WORDS
