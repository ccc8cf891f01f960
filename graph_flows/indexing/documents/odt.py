"""OpenDocument text (.odt) as Markdown with odfpy: headings, lists and tables kept.

``text:h`` with outline level N becomes N ``#`` (at most six), ``text:list`` items become
``-`` items indented by nesting, tables go through
:func:`~graph_flows.indexing.documents.tables.table_lines`, sections and other containers
are opened; every other paragraph is a text block. Title: the ``dc:title`` metadata.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.tables import close_lists, paragraph_block, table_lines

TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
TABLE_NS = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
SKIPPED = frozenset({(TEXT_NS, "sequence-decls"), (TEXT_NS, "tracked-changes"),
                     (TEXT_NS, "variable-decls"), (TEXT_NS, "user-field-decls")})


def convert_odt(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of an OpenDocument text file."""
    from odf import dc
    from odf.opendocument import load

    document = load(str(path))
    titles = document.meta.getElementsByType(dc.Title) if document.meta else []
    title = " ".join(_text(titles[0]).split()) if titles else ""
    return title or None, close_lists(_blocks(document.body)), {}


def _blocks(node: Any, depth: int = 0) -> Iterator[str]:
    """Markdown of the children of ``node`` (``depth``: list nesting)."""
    for child in node.childNodes:
        name = getattr(child, "qname", None)
        if name is None or name in SKIPPED:
            continue
        if name == (TEXT_NS, "h"):
            level = int(child.getAttribute("outlinelevel") or 1)
            text = _line(child)
            if text:
                yield f"{'#' * min(max(level, 1), 6)} {text}\n\n"
        elif name == (TEXT_NS, "p"):
            yield paragraph_block(_text(child))
        elif name == (TEXT_NS, "list"):
            yield from _list(child, depth)
        elif name == (TABLE_NS, "table"):
            lines = table_lines(_rows(child))
            if lines:
                yield "\n".join(lines) + "\n\n"
        else:
            yield from _blocks(child, depth)


def _list(node: Any, depth: int) -> Iterator[str]:
    for item in node.childNodes:
        if getattr(item, "qname", None) not in ((TEXT_NS, "list-item"), (TEXT_NS, "list-header")):
            continue
        for part in item.childNodes:
            name = getattr(part, "qname", None)
            if name == (TEXT_NS, "list"):
                yield from _list(part, depth + 1)
            elif name in ((TEXT_NS, "p"), (TEXT_NS, "h")) and (text := _line(part)):
                yield f"{'  ' * depth}- {text}\n"


def _rows(table: Any) -> list[list[str]]:
    rows = []
    for row in _descendants(table, (TABLE_NS, "table-row")):
        cells = [c for c in row.childNodes if getattr(c, "qname", None) == (TABLE_NS, "table-cell")]
        rows.append([" ".join(_text(c).split()) for c in cells])
    return rows


def _descendants(node: Any, name: tuple[str, str]) -> Iterator[Any]:
    for child in node.childNodes:
        if getattr(child, "qname", None) == name:
            yield child
        elif getattr(child, "childNodes", None):
            yield from _descendants(child, name)


def _line(node: Any) -> str:
    return " ".join(_text(node).split())


def _text(node: Any) -> str:
    from odf import teletype

    return str(teletype.extractText(node))
