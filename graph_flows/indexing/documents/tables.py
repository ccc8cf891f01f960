"""Tables and spreadsheet rows as readable lines, never cells run together.

A table whose first row looks like a header (every cell filled, none a number) becomes one
list item per data row, ``- Header: value; Other header: value``, so any chunk cut from the
middle of a long table still says what each value is. Other tables keep one ``| a | b |``
line per row. The chunker (:mod:`~graph_flows.indexing.documents.chunking`) keeps both
kinds of line whole.

Spreadsheet and CSV rows (:class:`SheetRows`) carry their row number:
``- row 12: Item: Rent; Amount: 1200``, which is what a citation can point at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime, time
from typing import Any

_NUMBER = re.compile(r"^[-+]?[\d.,\s%$€£]+$")
BULLET_CHARS = "•◦▪▫●○■□"


def paragraph_block(text: str) -> str:
    """A paragraph as a text block, or as a list item when it starts with a typed bullet
    ("• Parrots"); "" for an empty paragraph or a lone bullet."""
    text = " ".join(text.split())
    if text and text[0] in BULLET_CHARS:
        rest = text[1:].strip()
        return f"- {rest}\n" if rest else ""
    return f"{text}\n\n" if text else ""


def close_lists(blocks: Iterable[str]) -> Iterator[str]:
    """The blocks, with a blank line after a list item (a block ending in one newline) that
    a block other than an item follows, so that block is not read as part of the item."""
    in_list = False
    for block in blocks:
        if not block:
            continue
        is_item = not block.endswith("\n\n")
        if in_list and not is_item:
            yield "\n"
        in_list = is_item
        yield block


def cell_text(value: Any) -> str:
    """A cell's value as one line of text ("" for None)."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat(" ")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return " ".join(str(value).split())


def looks_like_header(cells: Sequence[str]) -> bool:
    """Every cell filled and none a bare number."""
    return bool(cells) and all(c and not _NUMBER.match(c) for c in cells)


def pairs(headers: Sequence[str], cells: Sequence[str]) -> str:
    """``Header: value; ...`` for the filled cells (a cell past the headers: its column)."""
    out = []
    for i, cell in enumerate(cells):
        if not cell:
            continue
        name = headers[i] if i < len(headers) and headers[i] else column_letter(i + 1)
        out.append(cell if cell == name else f"{name}: {cell}")
    return "; ".join(out)


def table_lines(rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a document table (Word, PowerPoint, OpenDocument); see the module text."""
    rows = [list(r) for r in rows if any(r)]
    if len(rows) >= 2 and looks_like_header(rows[0]):
        return [f"- {pairs(rows[0], r)}" for r in rows[1:]]
    return ["| " + " | ".join(c or " " for c in r) + " |" for r in rows]


def column_letter(number: int) -> str:
    """Spreadsheet column name of a 1-based column number (1 -> A, 28 -> AB)."""
    letters = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


class SheetRows:
    """Turns a sheet's (or a CSV file's) rows into ``- row N: ...`` lines.

    The first row with at least two filled cells, all text, is the header: it is not
    written, its names label the values of every later row. Rows before it are written as
    their cells joined by `` | ``; a header-less sheet labels values by column letter.
    """

    def __init__(self) -> None:
        self.header: list[str] | None = None
        self.header_row = 0
        self.rows = 0
        """Rows written so far."""

    def line(self, number: int, values: Sequence[Any]) -> str | None:
        """The line of row ``number`` (1-based), or None for an empty row or the header."""
        cells = [cell_text(v) for v in values]
        while cells and not cells[-1]:
            cells.pop()
        filled = [c for c in cells if c]
        if not filled:
            return None
        if self.header is None and len(filled) >= 2 and all(
                not _NUMBER.match(c) for c in filled) and self.rows < 10:
            self.header, self.header_row = cells, number
            return None
        self.rows += 1
        if self.header is None:
            return f"- row {number}: " + " | ".join(filled)
        return f"- row {number}: {pairs(self.header, cells)}"

    def header_only(self) -> str | None:
        """The header row as a line when no row followed it (else None)."""
        if self.rows or self.header is None:
            return None
        self.rows = 1
        return f"- row {self.header_row}: " + " | ".join(c for c in self.header if c)
