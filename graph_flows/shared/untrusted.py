"""Untrusted text (document passages, titles, questions) on its way to a model or a person.

Two defences, applied wherever such text leaves the store (the query graph's context and
prompts, ``--json``, MCP, the UI):

- **Withheld spans.** :func:`flagged_spans` finds the sentences of a text that read as
  instructions aimed at a model (the detector of :mod:`graph_flows.shared.injection`), at
  ingest for every chunk (stored with it, ``chunks.injection_spans``) and on the fly for a
  chunk stored before that. :func:`withhold` replaces each span by :data:`MARKER`, so the
  reader sees that something was left out and the model never reads it. A text whose
  instruction is spread over more than two sentences is withheld whole: what is left after
  withholding never reads as an instruction (fail safe).
- **Neutralised tags.** :func:`neutralize_tags` turns every tag-like ``<name>`` / ``</name>``
  (any case or spacing, ASCII, full-width or small ``<``, zero-width or bidi characters
  between the bracket and the name, letters of any script) into ``‹name›``, and chat-template
  markers (``<|im_start|>``, ``<<SYS>>``, ``[INST]``) likewise, so no text placed inside a
  prompt section (``<definitions>``, ``<facts>``, ``<passages>``, ``<question>``) can close it
  or open another. It changes only those brackets: ``x < y`` and ``a > b`` stay as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from graph_flows.shared.injection import looks_like_injection

MARKER = "[withheld: instruction-like text]"
"""What a withheld span reads as, everywhere (prompts, JSON, MCP, UI)."""

_ZW = "\u200b-\u200f\u2060-\u2064\ufeff\u00ad\u034f\u180e\u202a-\u202e\u2066-\u2069"
_SP = f"\\s{_ZW}"
_OPENERS = "<\uff1c\ufe64\u2329\u3008\u27e8"  # < ＜ ﹤ 〈 〈 ⟨
_CLOSERS = ">\uff1e\ufe65\u232a\u3009\u27e9"  # > ＞ ﹥ 〉 〉 ⟩
_NAME = f"(?:[^\\W\\d_]|[{_ZW}])(?:[\\w:.-]|[{_ZW}]){{0,60}}"
_SPACED_TAG = re.compile(f"[{_OPENERS}]([{_SP}]*/?[{_SP}]*{_NAME}[{_SP}]*/?[{_SP}]*)[{_CLOSERS}]")
"""A whole tag, spaces allowed around its name and slash: ``< / Facts >``."""
_TAG_OPEN = re.compile(f"[{_OPENERS}](?=[{_ZW}]*/?[{_ZW}]*(?:[^\\W\\d]|[|!?]))")
"""An opening bracket directly followed (invisible characters aside) by a letter of any
script, ``/``, ``|``, ``!`` or ``?``: ``<script src=x>``, ``</passages``, ``<|im_end|>``."""
_TAG_CLOSE = re.compile(f"‹([^‹›{_OPENERS}{_CLOSERS}\\n]{{0,200}}?)[{_CLOSERS}]")
"""The closing bracket of a construct whose opening bracket was neutralised."""
_CHAT_MARKERS = (
    (re.compile(r"\[(\s*/?\s*INST\s*)\]", re.IGNORECASE), r"⟦\1⟧"),
)
# Sentence ends (with closing quotes or brackets) followed by space, and line breaks.
_SEGMENT_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|\n")


_ANY_OPENER = re.compile(f"[{_OPENERS}\\[]")
"""A character every construct above starts with: text without one is returned as is (most
text; the full passes cost about 15 us per string, the query's context has ~200 strings)."""


def neutralize_tags(text: str) -> str:
    """``text`` with every tag-like construct's brackets made inert (see the module docs)."""
    text = str(text)
    if not _ANY_OPENER.search(text):
        return text
    text = _SPACED_TAG.sub(r"‹\1›", text)
    text = _TAG_OPEN.sub("‹", text)
    text = _TAG_CLOSE.sub(r"‹\1›", text)
    for pattern, replacement in _CHAT_MARKERS:
        text = pattern.sub(replacement, text)
    return text


def _detect(text: str) -> bool:
    """The injection detector: memoised for short texts (titles, questions, sentences seen
    again), not for long ones (a chunk is scanned once; its text would only fill the memo)."""
    if not text.strip():
        return False
    return looks_like_injection(text) if len(text) <= 300 \
        else looks_like_injection.__wrapped__(text)


def segments(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line of ``text``, surrounding spaces left out."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in [*_SEGMENT_END.finditer(text), None]:
        end = len(text) if m is None else m.end()
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, start + len(piece.rstrip())))
        start = end
    return out


def flagged_spans(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` to withhold, merged and in order; ``[]`` for clean text.

    Each sentence or line is tested alone, then each pair of neighbours still clean (an
    instruction cut by a full stop); if what is left still reads as an instruction, the
    whole text is withheld."""
    if not _detect(text):
        return []
    parts = segments(text)
    hit = [_detect(text[s:e]) for s, e in parts]
    for i in range(len(parts) - 1):
        if not (hit[i] or hit[i + 1]) and _detect(text[parts[i][0]:parts[i + 1][1]]):
            hit[i] = hit[i + 1] = True
    spans = merge_spans([p for p, h in zip(parts, hit, strict=True) if h], text)
    if not spans or _detect(withhold(text, spans)):
        return [(0, len(text))]
    return spans


def merge_spans(spans: Iterable[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """Sorted spans, neighbours separated only by whitespace joined into one."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and not text[out[-1][1]:s].strip():
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def withhold(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with each span replaced by :data:`MARKER`."""
    if not spans:
        return text
    parts, at = [], 0
    for s, e in sorted(spans):
        if s < at:  # overlapping spans: the earlier one already covers the start
            s = at
        parts += [text[at:s], MARKER]
        at = max(at, e)
    parts.append(text[at:])
    return "".join(parts)


def flat_spans(spans: Sequence[tuple[int, int]]) -> list[int]:
    """Spans as the flat ``[s1, e1, s2, e2, ...]`` list stored with a chunk."""
    return [x for span in spans for x in span]


def pairs(flat: Sequence[int] | None) -> list[tuple[int, int]]:
    """The spans of a stored flat list (see :func:`flat_spans`)."""
    flat = list(flat or ())
    return list(zip(flat[0::2], flat[1::2], strict=True))


def without_flagged(text: str) -> str:
    """``text`` with its instruction-like spans cut out (a space in their place): what of a
    question may be searched for again or echoed in a follow-up query."""
    out, at = [], 0
    for s, e in sorted(flagged_spans(text)):
        out += [text[at:max(s, at)], " "]
        at = max(at, e)
    out.append(text[at:])
    return "".join(out)


def for_prompt(text: str) -> tuple[str, bool]:
    """A short untrusted text (a question, a title) ready for a prompt or a reader:
    instruction-like spans withheld, tags neutralised; and whether anything was withheld."""
    spans = flagged_spans(text)
    return neutralize_tags(withhold(text, spans)), bool(spans)


def question_message(query: str) -> str:
    """The question as the user message of a prompt: inside ``<question>``, its
    instruction-like spans withheld and its tags neutralised (it may come from an agent
    that read it somewhere)."""
    return f"<question>\n{for_prompt(query)[0]}\n</question>"


def guard_passage(row: dict[str, Any]) -> dict[str, Any]:
    """A chunk row (storage.evidence.chunk_rows) ready to leave the store: its stored spans
    (or, for a chunk not scanned yet, those found now) withheld from the text, the title
    checked the same way, tags neutralised in both; ``withheld`` counts the spans withheld
    (a withheld title counts one). The stored spans themselves are not passed on."""
    out = dict(row)
    stored = out.pop("injection_spans", None)
    body = str(out.get("text") or "")
    spans = flagged_spans(body) if stored is None else pairs(stored)
    title, title_withheld = for_prompt(str(out.get("title") or ""))
    out["text"] = neutralize_tags(withhold(body, spans))
    out["title"] = title
    out["withheld"] = len(spans) + int(title_withheld)
    return out


def withheld_counts(passages: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many of ``passages`` had instruction-like text withheld, and how many spans."""
    return {"passages": sum(1 for p in passages if p.get("withheld")),
            "spans": sum(int(p.get("withheld") or 0) for p in passages)}


def scan_chunk(text: str) -> list[int]:
    """The spans to store with a chunk (storage.injection_spans), flat."""
    return flat_spans(flagged_spans(text))
