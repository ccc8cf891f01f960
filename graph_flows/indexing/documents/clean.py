"""Text cleaning, run before hashing and chunking (garbage cleaned here never reaches the index).

:func:`clean_text` is deterministic: the same input always gives the same output, so the
document hash is computed on cleaned text and boilerplate-only changes do not re-index.

What it does, in order:

1. Newlines normalised (``\\r\\n``, ``\\r``, U+2028/2029 -> ``\\n``); NUL and other control
   characters removed (tab and form feed kept for now); soft hyphens and zero-width spaces
   removed; no-break spaces become spaces; ``ﬁ``-style ligatures expanded; NFC normalisation.
2. Pages (split on form feed ``\\f``, as the PDF loader emits them): when there are at least
   three pages, lines among the first/last two non-blank lines of a page that recur (digits
   ignored) on :data:`MIN_REPEATS` or more pages are running headers/footers and are removed.
   Pages are joined back; a word hyphenated across a page break is rejoined.
3. Outside fenced code blocks, line by line: page-number lines ("Page 3 of 10", "- 3 -",
   "3", "p. 3"), copyright lines ("© 2024 ...", "Copyright 2024 ...", "... All rights
   reserved."), download stamps ("This content downloaded from ...", "Downloaded from ...",
   "All use subject to ...") are dropped; runs of spaces/tabs inside a line collapse to one
   space (leading indentation is kept for nested lists); trailing spaces go.
4. Outside code fences, words hyphenated across a line break are joined when the next line
   starts with a lowercase letter ("knowl-\\nedge" -> "knowledge").
5. Outside code fences, three or more newlines collapse to a paragraph break; the text is
   trimmed.

Headings, list markers and code fences are left as they are (fenced code is never touched
except for step 1).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

MIN_REPEATS = 3
EDGE_LINES = 2
BOILERPLATE_MAX_LEN = 300

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile(r"[\u00ad\u200b\u2060\ufeff]")
_LIGATURES = {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_SPACE_RUN = re.compile(r"(?<=\S)(?:[ \t]{2,}|\t)")

_PAGE_NUMBER = re.compile(
    r"^\s*(?:"
    r"(?:page|pg\.?|p\.)\s*\d{1,5}(?:\s*(?:of|/)\s*\d{1,5})?"  # Page 3, Page 3 of 10, p. 3
    r"|[-–—]\s*\d{1,5}\s*[-–—]"  # - 3 -
    r"|\d{1,5}(?:\s*/\s*\d{1,5})?"  # 3, 3/10
    r"|\[\s*\d{1,5}\s*\]"  # [3]
    r")\s*$",
    re.IGNORECASE,
)
_BOILERPLATE = (
    re.compile(r"^\W*(?:copyright\s*(?:©|\(c\))?|©|\(c\))\s*(?:\d{4}|by\b)", re.IGNORECASE),
    re.compile(r"\ball rights reserved\b", re.IGNORECASE),
    re.compile(r"^\W*(?:this\s+content\s+(?:was\s+)?)?downloaded\s+(?:from|by|on)\b", re.I),
    re.compile(r"^\W*all\s+use\s+subject\s+to\b", re.IGNORECASE),
)
_HYPHEN_BREAK = re.compile(r"([^\W\d_]{2,})-\n[ \t]*([a-zß-öø-ÿ])")
_BLANK_RUNS = re.compile(r"\n{3,}")


def clean_text(text: str) -> str:
    """Remove extraction noise and boilerplate from a document, keeping its structure."""
    text = _normalise_characters(text)
    pages = text.split("\f")
    if len(pages) >= MIN_REPEATS:
        pages = _strip_running_lines(pages)
    text = _join_pages(pages)
    return _clean_outside_fences(text).strip()


def _normalise_characters(text: str) -> str:
    """Step 1: newlines, control and invisible characters, ligatures, NFC."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u2028", "\n").replace("\u2029", "\n\n").replace("\x0b", "\n")
    text = _CONTROL.sub("", text)
    text = _INVISIBLE.sub("", text)
    text = text.replace("\u00a0", " ").replace("\u202f", " ")
    for ligature, letters in _LIGATURES.items():
        text = text.replace(ligature, letters)
    return unicodedata.normalize("NFC", text)


def _line_key(line: str) -> str:
    """Comparison key for header/footer detection: digits ignored, whitespace and case folded."""
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", line)).strip().casefold()


def _edge_indexes(lines: list[str]) -> list[int]:
    """Indexes of the first and last EDGE_LINES non-blank lines of a page."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:]))


def _strip_running_lines(pages: list[str]) -> list[str]:
    """Remove header/footer lines that recur at the edges of MIN_REPEATS or more pages."""
    split = [page.split("\n") for page in pages]
    counts: Counter[str] = Counter()
    for lines in split:
        counts.update({_line_key(lines[i]) for i in _edge_indexes(lines)})
    running = {key for key, n in counts.items() if n >= MIN_REPEATS and key}
    if not running:
        return pages
    out = []
    for lines in split:
        drop = {i for i in _edge_indexes(lines) if _line_key(lines[i]) in running}
        out.append("\n".join(line for i, line in enumerate(lines) if i not in drop))
    return out


def _join_pages(pages: list[str]) -> str:
    """Join pages with a paragraph break, rejoining words hyphenated across the break."""
    text = ""
    for page in pages:
        page = page.strip("\n ")
        if not page:
            continue
        if not text:
            text = page
        elif re.search(r"[^\W\d_]-$", text) and re.match(r"[a-zß-öø-ÿ]", page):
            text = text[:-1] + page
        else:
            text = text + "\n\n" + page
    return text


def _segments(lines: list[str]) -> Iterable[tuple[bool, list[str]]]:
    """Split lines into runs of (inside_code_fence, lines); fence lines belong to the code."""
    current: list[str] = []
    in_code = False
    marker = ""
    for line in lines:
        fence = _FENCE.match(line)
        if not in_code and fence:
            if current:
                yield False, current
            current, in_code, marker = [line], True, fence.group(1)
        elif in_code and fence and fence.group(1) == marker:
            current.append(line)
            yield True, current
            current, in_code = [], False
        else:
            current.append(line)
    if current:
        yield in_code, current


def _clean_outside_fences(text: str) -> str:
    """Steps 3 and 4 on every part of the text that is not fenced code."""
    parts = []
    for is_code, lines in _segments(text.split("\n")):
        if is_code:
            parts.append("\n".join(lines))
            continue
        kept = [_collapse_spaces(line) for line in lines if not _is_noise_line(line)]
        prose = _HYPHEN_BREAK.sub(r"\1\2", "\n".join(kept))
        parts.append(_BLANK_RUNS.sub("\n\n", prose))
    return "\n".join(parts)


def _collapse_spaces(line: str) -> str:
    """Collapse inner runs of blanks to one space, keep indentation, drop trailing blanks."""
    return _SPACE_RUN.sub(" ", line).rstrip()


def _is_noise_line(line: str) -> bool:
    """Page numbers and boilerplate lines (only short lines, never a whole paragraph)."""
    stripped = line.strip()
    if not stripped or len(stripped) > BOILERPLATE_MAX_LEN:
        return False
    if _PAGE_NUMBER.match(stripped):
        return True
    return any(pattern.search(stripped) for pattern in _BOILERPLATE)
