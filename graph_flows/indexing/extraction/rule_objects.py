"""The object of a verb when it is a lower-case noun phrase ("uses punched cards"), for the
rule extractor (:func:`rules._object_phrase_relation`).

The words after the verb are cut at the first word that cannot continue a noun phrase
(:data:`rule_lexicon.OBJECT_STOP`: "and", "which", "in" ...). With a parse, the phrase also
ends where spaCy's noun chunk that holds its first word ends, and there is none when that
word is in no noun chunk: a noun phrase ends with its head noun, so a participle or a verb
after it ("a query language called PostQUEL", "requires running both through the model")
is never part of it. Then the span is cut down to the name (:func:`name_bounds.trim_span`:
"its own query language" -> "query language") and dropped when it is still junk, shorter
than three characters or made of stop words only.
"""

from __future__ import annotations

import re
from typing import Any

from graph_flows.indexing.extraction import rule_lexicon as lex
from graph_flows.indexing.extraction.name_bounds import is_junk, trim_span

_WORD = re.compile(r"\S+")


def object_span(sentence: str, start: int, end: int,
                doc: Any = None) -> tuple[int, int] | None:
    """``[start, end)`` of the noun phrase that ``sentence[start:end]`` begins with (module
    docstring); ``doc`` is the sentence's spaCy parse, if any."""
    words = []
    for word in _WORD.finditer(sentence, start, end):
        if word.group().lower() in lex.OBJECT_STOP:
            break
        words.append(word)
    if doc is not None:
        chunk_end = _chunk_end(doc, start)
        words = [w for w in words if chunk_end is not None and w.end() <= chunk_end]
    while words and words[-1].group().lower() in lex.STOPWORDS:
        words.pop()
    if not words:
        return None
    span = trim_span(sentence, words[0].start(), words[-1].end())
    if span is None:
        return None
    text = sentence[span[0] : span[1]]
    if len(text) < 3 or is_junk(text) or all(
            w.lower() in lex.STOPWORDS for w in text.split()):
        return None
    return span


def _chunk_end(doc: Any, position: int) -> int | None:
    """End of the noun chunk of ``doc`` that holds character ``position``, if one does."""
    for chunk in doc.noun_chunks:
        if chunk.start_char <= position < chunk.end_char:
            return int(chunk.end_char)
    return None
