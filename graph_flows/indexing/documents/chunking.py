"""Structure-aware chunking: markdown sections first, then paragraphs, then sentences.

Rules of :func:`chunk_text`:

* A markdown ATX heading (``#`` .. ``######``, outside code fences) always starts a new chunk.
  Every chunk begins with its heading path, one heading line per level (``# Guide`` then
  ``## Install``), followed by a blank line, so the extractor knows which section it reads.
  A path longer than a third of ``size`` is shortened to its last heading, truncated.
* Inside a section, text is cut only between sentences (or list items, table rows, code
  blocks); a single unit longer than the room left is cut at whitespace (hard cut when a
  piece has no whitespace at all).
* Chunks hold at most ``size`` characters, heading path included. Consecutive chunks of the
  same section share trailing whole sentences of up to ``overlap`` characters; no overlap
  crosses a heading.
* Paragraph lines are joined with spaces (hard-wrapped PDF text becomes flowing sentences);
  list items and table rows keep their own lines; fenced code keeps its lines.

The output is deterministic. Empty or whitespace-only text gives no chunks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MIN_SIZE = 100
MAX_SIZE = 20000

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+]\s|\d{1,3}[.)]\s|\||>)")
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*\s+(?=[\"'“‘(\[]*[A-Z0-9À-ÖØ-Þ])")
_ABBREVIATIONS_TEXT = (
    "mr mrs ms dr prof sr jr st mt fig figs no nos vol vols eq eqs ch sec approx cf al "
    "etc vs esp ca gen col lt sgt rev hon dept univ jan feb mar apr jun jul aug sep sept "
    "oct nov dec"
)
ABBREVIATIONS = frozenset(_ABBREVIATIONS_TEXT.split())

Unit = tuple[str, str]
"""(separator placed before the unit when it follows another one, unit text)."""


def split_sentences(text: str) -> list[str]:
    """Split flowing text into sentences (abbreviations and initials such as "A." kept)."""
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        head = text[start : match.end()].rstrip()
        if _ends_with_abbreviation(head):
            continue
        out.append(head.strip())
        start = match.end()
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return [s for s in out if s]


def _ends_with_abbreviation(head: str) -> bool:
    """True when the last word before a sentence-looking boundary is an abbreviation."""
    words = head.split()
    if not words:
        return False
    word = words[-1].rstrip("\"'”’)]").rstrip(".")
    if not word or word.endswith(("!", "?")):
        return False
    if word.lower() in ABBREVIATIONS or re.fullmatch(r"[A-Z]", word):
        return True
    return bool(re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word))  # e.g, i.e, U.S


def chunk_text(text: str, *, size: int = 1000, overlap: int = 100) -> list[str]:
    """Cut ``text`` into chunks of at most ``size`` characters (see the module docstring)."""
    _check_args(size, overlap)
    chunks: list[str] = []
    for path, lines in _sections(text):
        prefix = _prefix(path, size)
        budget = size - len(prefix) - (2 if prefix else 0)
        for body in _pack(_split_long_units(_units(lines), budget), budget, overlap):
            chunks.append(f"{prefix}\n\n{body}" if prefix else body)
    if not chunks and text.strip():  # headings only: keep them as the content
        chunks = _pieces(text.strip(), size)
    return chunks


def _check_args(size: int, overlap: int) -> None:
    """Raise ValueError naming the violated limit."""
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(f"chunk size must be between {MIN_SIZE} and {MAX_SIZE}, got {size}")
    if not 0 <= overlap < size / 2:
        raise ValueError(f"chunk overlap must be >= 0 and < size/2 ({size / 2:g}), got {overlap}")


def heading_path(text: str, start: Sequence[str] = ()) -> list[str]:
    """Heading lines in force at the end of ``text``, continuing from the path ``start``."""
    stack = [(len(h) - len(h.lstrip("#")), h) for h in start]
    for line, is_code in lines_with_fences(text.split("\n")):
        match = None if is_code else HEADING.match(line)
        if match:
            level = len(match.group(1))
            stack = [item for item in stack if item[0] < level]
            stack.append((level, f"{match.group(1)} {match.group(2).strip()}"))
    return [h for _, h in stack]


def lines_with_fences(lines: list[str]) -> list[tuple[str, bool]]:
    """Each line with a flag: inside (or delimiting) a fenced code block."""
    out = []
    marker = ""
    for line in lines:
        fence = _FENCE.match(line)
        if fence and not marker:
            marker = fence.group(1)
            out.append((line, True))
        elif fence and fence.group(1) == marker:
            marker = ""
            out.append((line, True))
        else:
            out.append((line, bool(marker)))
    return out


def _sections(text: str) -> list[tuple[list[str], list[tuple[str, bool]]]]:
    """(heading path, body lines with code flags) per markdown section, in order."""
    sections: list[tuple[list[str], list[tuple[str, bool]]]] = []
    path: list[str] = []
    body: list[tuple[str, bool]] = []
    for line, is_code in lines_with_fences(text.split("\n")):
        if not is_code and HEADING.match(line):
            sections.append((path, body))
            path, body = heading_path(line, path), []
        else:
            body.append((line, is_code))
    sections.append((path, body))
    return sections


def _prefix(path: list[str], size: int) -> str:
    """The heading path written at the top of each chunk, at most size // 3 characters."""
    prefix = "\n".join(path)
    if len(prefix) > size // 3:
        prefix = path[-1][: size // 3]
    return prefix


def _units(lines: list[tuple[str, bool]]) -> list[Unit]:
    """Sentences, list items, table rows and code blocks of a section body."""
    units: list[Unit] = []
    for block, is_code in _blocks(lines):
        if is_code:
            units.append(("\n\n", "\n".join(block)))
            continue
        for i, item in enumerate(_items(block)):
            for j, sentence in enumerate(split_sentences(item)):
                sep = " " if j else ("\n" if i else "\n\n")
                units.append((sep, sentence))
    return units


def _blocks(lines: list[tuple[str, bool]]) -> list[tuple[list[str], bool]]:
    """Paragraph blocks (split at blank lines) and fenced code blocks."""
    blocks: list[tuple[list[str], bool]] = []
    current: list[str] = []
    current_code = False
    for line, is_code in lines:
        boundary = is_code != current_code or (not is_code and not line.strip())
        if boundary and current:
            blocks.append((current, current_code))
            current = []
        current_code = is_code
        if is_code or line.strip():
            current.append(line.rstrip())
    if current:
        blocks.append((current, current_code))
    return blocks


def _items(block: list[str]) -> list[str]:
    """Join the lines of a block: list items / table rows start a new item, others continue."""
    items: list[str] = []
    for line in block:
        if not items or _ITEM.match(line):
            items.append(line.strip())
        else:
            items[-1] = f"{items[-1]} {line.strip()}"
    return items


def _split_long_units(units: list[Unit], budget: int) -> list[Unit]:
    """Cut units longer than the budget into pieces that fit."""
    out: list[Unit] = []
    for sep, text in units:
        if len(text) <= budget:
            out.append((sep, text))
            continue
        for k, piece in enumerate(_pieces(text, budget)):
            out.append((sep if k == 0 else ("\n" if "\n" in text else " "), piece))
    return out


def _pieces(text: str, limit: int) -> list[str]:
    """Cut text into pieces of at most ``limit`` characters, at whitespace when possible."""
    pieces = []
    while len(text) > limit:
        cut = max(text.rfind("\n", 0, limit + 1), text.rfind(" ", 0, limit + 1))
        if cut < limit // 2:
            cut = limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return [p for p in pieces if p]


def _render(units: list[Unit]) -> str:
    """Join units with their separators (the first unit's separator is dropped)."""
    return "".join(text if i == 0 else sep + text for i, (sep, text) in enumerate(units))


def _tail(units: list[Unit], overlap: int) -> list[Unit]:
    """The trailing whole units of a chunk that fit in ``overlap`` characters."""
    tail: list[Unit] = []
    for unit in reversed(units):
        if len(_render([unit, *tail])) > overlap:
            break
        tail.insert(0, unit)
    return tail


def _pack(units: list[Unit], budget: int, overlap: int) -> list[str]:
    """Greedily pack units into chunks of at most ``budget`` characters with overlap."""
    chunks: list[str] = []
    current: list[Unit] = []
    for unit in units:
        if current and len(_render([*current, unit])) > budget:
            chunks.append(_render(current))
            current = _tail(current, overlap)
            while current and len(_render([*current, unit])) > budget:
                current.pop(0)
        current.append(unit)
    if current:
        chunks.append(_render(current))
    return chunks
