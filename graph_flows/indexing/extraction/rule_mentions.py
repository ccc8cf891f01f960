"""Name mentions in one sentence, for the rule-based extractor (see :mod:`rule_extractor`).

A mention is a run of capitalised words, acronyms and capitalised technical tokens separated
by single spaces (connectors such as "of" allowed inside, a version number allowed at the
end), or a standalone lowercase technical token ("pg_trgm", "k8s"). Each mention carries a
type guess and a confidence; the rules are listed in :mod:`rule_extractor`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from graph_flows.indexing.extraction import rule_lexicon as lex
from graph_flows.indexing.extraction.name_bounds import is_junk, trim_span

MAX_NAME_WORDS = 5
_TOKEN = re.compile(r"[^\W_](?:[\w.+#'’&-]*[\w+#])?")
_POSSESSIVE = re.compile(r"['’]s$")
_VERSION = re.compile(r"\d{1,3}(?:\.\d+)*")
_ACRONYM = re.compile(r"[A-Z][A-Z0-9&]*[A-Z0-9]s?")
_DOTTED = re.compile(r"[A-Za-z][\w-]*(?:\.[A-Za-z][\w-]*)+")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Mention:
    """A name found in a sentence: text, character span, type guess and confidence."""

    name: str
    start: int
    end: int
    type: str
    confidence: float


@dataclass(frozen=True)
class _Token:
    """A word of a sentence; ``end`` excludes a possessive "'s", ``raw_end`` includes it."""

    text: str
    start: int
    end: int
    raw_end: int

    @property
    def possessive(self) -> bool:
        """True when the word ended with "'s"."""
        return self.raw_end != self.end


def _tokens(sentence: str) -> list[_Token]:
    """Words of a sentence with their spans."""
    out = []
    for match in _TOKEN.finditer(sentence):
        text, end = match.group(), match.end()
        if _POSSESSIVE.search(text) and len(text) > 2:
            text, end = text[:-2], end - 2
        out.append(_Token(text, match.start(), end, match.end()))
    return out


def is_acronym(word: str) -> bool:
    """NASA, GPU, LLMs, AT&T (two or more capitals, at most ten characters)."""
    return bool(_ACRONYM.fullmatch(word)) and sum(c.isupper() for c in word) >= 2 \
        and len(word) <= 10


def is_technical(word: str) -> bool:
    """CamelCase, snake_case, letters with digits, dotted names or a ++/# suffix."""
    if not word[:1].isalpha():
        return False
    return bool(
        re.search(r"[a-z][A-Z]", word)
        or ("_" in word and _LETTER.search(word))
        or _has_letter_digit(word)
        or (_DOTTED.fullmatch(word) and max(len(p) for p in word.split(".")) >= 2
            and min(len(p) for p in word.split(".")) >= 2)
        or word.endswith(("++", "#"))
    )


def _has_letter_digit(word: str) -> bool:
    """True for letters mixed with digits ("H100", "GPT-4"), false for plain acronyms."""
    return any(c.isdigit() for c in word) and any(c.isalpha() for c in word)


def _is_capitalised(word: str) -> bool:
    """Ada, PostgreSQL: an upper-case first letter and at least one lower-case letter."""
    return word[:1].isupper() and any(c.islower() for c in word)


def _is_name_word(word: str, shouting: bool) -> bool:
    """A word that may be part of a multi-word name."""
    if word.lower() in lex.STOPWORDS and not is_acronym(word):
        return False
    return _is_capitalised(word) or (is_acronym(word) and not shouting) or (
        word[:1].isupper() and is_technical(word)
    )


def _is_shouting(tokens: list[_Token]) -> bool:
    """True for an all-caps sentence, where acronyms cannot be told from words."""
    words = [t.text for t in tokens if _LETTER.search(t.text) and len(t.text) > 1]
    return len(words) >= 4 and sum(w.isupper() for w in words) >= 0.6 * len(words)


def capitalised_words(sentences: Iterable[str]) -> set[str]:
    """Capitalised words that appear somewhere other than at the start of a sentence."""
    known: set[str] = set()
    for sentence in sentences:
        for token in _tokens(sentence)[1:]:
            if _is_capitalised(token.text):
                known.add(token.text)
    return known


def find_mentions(sentence: str, known: set[str]) -> list[Mention]:
    """Name mentions of one sentence, left to right, not overlapping."""
    tokens = _tokens(sentence)
    shouting = _is_shouting(tokens)
    mentions: list[Mention] = []
    i = 0
    while i < len(tokens):
        titled = _after_title(sentence, tokens, i)
        if titled:
            i += 1
        word = tokens[i].text
        if not (_is_name_word(word, shouting) or is_technical(word)):
            i += 1
            continue
        j = _extend(sentence, tokens, i, shouting)
        mention = _mention(sentence, tokens[i:j], known, titled)
        if mention is not None:
            mentions.append(mention)
        i = j
    return mentions


def trimmed(sentence: str, mention: Mention) -> Mention | None:
    """The mention cut down to its name (:func:`name_bounds.trim_span`: function words,
    a naming participle and half quotations off its ends), or None when what is left is no
    name (:func:`name_bounds.is_junk`)."""
    span = trim_span(sentence, mention.start, mention.end)
    if span is None or is_junk(sentence[span[0] : span[1]]):
        return None
    if span == (mention.start, mention.end):
        return mention
    return replace(mention, name=sentence[span[0] : span[1]], start=span[0], end=span[1])


def _gap(sentence: str, left: _Token, right: _Token) -> str:
    """The characters between two tokens."""
    return sentence[left.raw_end : right.start]


def _after_title(sentence: str, tokens: list[_Token], i: int) -> bool:
    """True when token i is a personal title followed by a capitalised word."""
    if tokens[i].text not in lex.TITLES or i + 1 >= len(tokens):
        return False
    return _is_capitalised(tokens[i + 1].text) and _gap(sentence, tokens[i], tokens[i + 1]) in {
        " ", ". "}


def _extend(sentence: str, tokens: list[_Token], i: int, shouting: bool) -> int:
    """End (exclusive) of the name run starting at token i."""
    if not _is_name_word(tokens[i].text, shouting):
        return i + 1  # a lowercase technical token stands alone
    j = i + 1
    while j < len(tokens) and not tokens[j - 1].possessive:
        if _gap(sentence, tokens[j - 1], tokens[j]) != " ":
            break
        word = tokens[j].text
        if _is_name_word(word, shouting):
            j += 1
        elif (word in lex.CONNECTORS and j + 1 < len(tokens)
              and _gap(sentence, tokens[j], tokens[j + 1]) == " "
              and _is_name_word(tokens[j + 1].text, shouting)):
            j += 2
        elif _VERSION.fullmatch(word):
            j += 1
            break
        else:
            break
    return j


def _mention(sentence: str, run: list[_Token], known: set[str], titled: bool) -> Mention | None:
    """A mention from a run of tokens, or None when the run is not a plausible name."""
    while run and (run[0].text.lower() in lex.STOPWORDS or run[0].text in lex.CONNECTORS):
        run = run[1:]
    while run and (run[-1].text.lower() in lex.STOPWORDS or run[-1].text in lex.CONNECTORS):
        run = run[:-1]
    if not run or len(run) > MAX_NAME_WORDS or _VERSION.fullmatch(run[0].text):
        return None
    words = [t.text for t in run]
    initial = not _LETTER.search(sentence[: run[0].start])
    plain = _is_capitalised(words[0]) and not is_technical(words[0])
    if initial and len(words) == 1 and plain and words[0] not in known | lex.KNOWN_TECH:
        return None
    start, end = run[0].start, run[-1].end
    rtype, confidence = guess_type(sentence, words, start, end, titled)
    return Mention(sentence[start:end], start, end, rtype, confidence)


def cue_type(words: list[str], before: str = "") -> str | None:
    """organization for a name with an organisation word ("Velmor Town Council"), location
    after "born/based/moved in/to" (``before``: the sentence up to the name) or for a
    multi-word name ending with a place word ("Orsina Valley"), else None."""
    if any(w in lex.ORG_WORDS for w in words):
        return "organization"
    if re.search(lex.LOCATION_CUE, before, re.IGNORECASE) or (
            len(words) > 1 and words[-1] in lex.LOCATION_WORDS):
        return "location"
    return None


def guess_type(
    sentence: str, words: list[str], start: int, end: int, titled: bool = False
) -> tuple[str, float]:
    """(entity type, confidence) for a name, from cue words and context."""
    name = " ".join(words)
    if titled:
        return "person", 0.8
    if any(w in lex.ORG_WORDS for w in words) or name in lex.ORG_ACRONYMS:
        return "organization", 0.8
    if re.search(lex.LOCATION_CUE, sentence[:start], re.IGNORECASE):
        return "location", 0.8
    if words[-1] in lex.LOCATION_WORDS and len(words) > 1:
        return "location", 0.75
    known_tech = words[0] in lex.KNOWN_TECH and (
        len(words) == 1 or bool(_VERSION.fullmatch(words[-1])))
    if (known_tech or any(is_technical(w) for w in words) or name in lex.TECH_ACRONYMS
            or (words[-1] in lex.TECH_WORDS and len(words) > 1)):
        return "technology", 0.75
    capitalised = all(_is_capitalised(w) for w in words)
    if 2 <= len(words) <= 3 and capitalised and (
        words[0] in lex.FIRST_NAMES or re.match(lex.PERSON_CUE, sentence[end:], re.IGNORECASE)
    ):
        return "person", 0.75
    return "concept", 0.7 if len(words) > 1 else 0.65
