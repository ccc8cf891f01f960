"""Word (.docx) as Markdown with python-docx: headings, lists and tables kept.

The body is read in order, paragraphs and tables interleaved. A paragraph styled ``Title``
becomes ``#``, ``Heading N`` becomes N ``#`` (at most six), so the chunker gives each passage
its section path; a numbered or bulleted paragraph (its own numbering or its style's)
becomes a ``1.`` or ``-`` item indented by its level; tables go through
:func:`~graph_flows.indexing.documents.tables.table_lines`. Headers, footers, comments and
pictures are left out. Title: the document's core ``title`` property, if set.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.tables import close_lists, paragraph_block, table_lines

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def convert_docx(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of a Word file."""
    import docx
    from docx.table import Table

    document = docx.Document(str(path))
    formats = _NumberFormats(document)
    title = (document.core_properties.title or "").strip() or None

    def blocks() -> Iterator[str]:
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                lines = table_lines(_table_rows(item))
                yield "\n".join(lines) + "\n\n" if lines else ""
            else:
                yield _paragraph(item, formats)

    return title, close_lists(blocks()), {}


def _paragraph(paragraph: Any, formats: _NumberFormats) -> str:
    """A paragraph as a Markdown heading, list item or text block ("" when empty)."""
    text = " ".join(paragraph.text.split())
    if not text:
        return ""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    heading = _HEADING_STYLE.match(style)
    level = int(heading.group(1)) if heading else _outline_level(paragraph)
    if style.lower() == "title":
        return f"# {text}\n\n"
    if level:
        return f"{'#' * min(level, 6)} {text}\n\n"
    item = formats.marker(paragraph, style)
    if item is not None:
        marker, depth = item
        return f"{'  ' * depth}{marker} {text}\n"  # an item: one newline
    return paragraph_block(text)


def _outline_level(paragraph: Any) -> int:
    """1-9 for a paragraph given an outline level (directly or by its style), else 0."""
    for ppr in (paragraph._p.pPr, _style_ppr(paragraph)):
        found = ppr.xpath("w:outlineLvl/@w:val") if ppr is not None else []
        if found and str(found[0]).isdigit() and int(found[0]) < 9:
            return int(found[0]) + 1
    return 0


def _table_rows(table: Any) -> list[list[str]]:
    """Cell texts per row, from the row's own cells: a merged cell once (python-docx's
    grid view, ``row.cells``, raises on some real files' grids)."""
    from docx.table import _Cell

    return [[" ".join(_Cell(tc, table).text.split()) for tc in tr.tc_lst]
            for tr in table._tbl.tr_lst]


class _NumberFormats:
    """A list paragraph's marker: a bullet, or its number counted per list and level (the
    format read from numbering.xml)."""

    def __init__(self, document: Any) -> None:
        try:
            self.numbering = document.part.numbering_part.element
        except (KeyError, NotImplementedError):
            self.numbering = None
        self.counts: dict[tuple[Any, int], int] = {}

    def marker(self, paragraph: Any, style: str) -> tuple[str, int] | None:
        """("-" or "1.", level) of a list paragraph, None for other paragraphs."""
        num_pr = _num_pr(paragraph._p.pPr)
        if num_pr is None:
            num_pr = _num_pr(_style_ppr(paragraph))
        if num_pr is None:
            if style.lower().startswith("list bullet"):
                return "-", 0
            if style.lower().startswith("list number"):
                return self._number(style, 0), 0
            return None
        num_id = num_pr.numId.val if num_pr.numId is not None else None
        level = num_pr.ilvl.val if num_pr.ilvl is not None else 0
        if num_id is None or num_id == 0:
            return None
        if self._format(num_id, level) == "bullet":
            return "-", min(level, 8)
        return self._number(num_id, level), min(level, 8)

    def _number(self, list_id: Any, level: int) -> str:
        """``N.``: this item's number in its list at its level (deeper levels restart)."""
        for key in [k for k in self.counts if k[0] == list_id and k[1] > level]:
            del self.counts[key]
        self.counts[(list_id, level)] = self.counts.get((list_id, level), 0) + 1
        return f"{self.counts[(list_id, level)]}."

    def _format(self, num_id: int, level: int) -> str:
        if self.numbering is None:
            return "bullet"
        found = self.numbering.xpath(
            f'w:num[@w:numId="{num_id}"]/w:abstractNumId/@w:val')
        if not found:
            return "bullet"
        fmt = self.numbering.xpath(
            f'w:abstractNum[@w:abstractNumId="{found[0]}"]/w:lvl[@w:ilvl="{level}"]'
            '/w:numFmt/@w:val')
        return str(fmt[0]) if fmt else "bullet"


def _num_pr(ppr: Any) -> Any:
    return ppr.numPr if ppr is not None else None


def _style_ppr(paragraph: Any) -> Any:
    style = paragraph.style
    return style.element.pPr if style is not None and style.element is not None else None
