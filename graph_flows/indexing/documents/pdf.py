"""PDF text with pypdf: one text per page, pages separated by form feeds (``\\f``).

The form feeds let :func:`graph_flows.indexing.documents.clean.clean_text` find page numbers and
running headers/footers. Pages are read one at a time from the open file, so a long PDF is
yielded in parts of at most ``max_bytes`` characters cut at page breaks (see
:mod:`graph_flows.indexing.documents.loaders`).
Title: the PDF's ``/Title`` metadata, else the file stem.
Metadata: ``pages`` (page count), plus ``first_page``/``last_page`` for parts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.types import LoadedDocument, LoadFailure, LoadResult

log = logging.getLogger(__name__)


def load_pdf(path: Path, uri: str, base: dict[str, Any], max_bytes: int) -> Iterator[LoadResult]:
    """Documents (one, or page-aligned parts) or one failure for a PDF file."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    with path.open("rb") as handle:
        try:
            reader = PdfReader(handle)
            if reader.is_encrypted and not reader.decrypt(""):
                yield LoadFailure(uri, "encrypted PDF; remove the password and index it again")
                return
            title = _title(reader) or path.stem
            meta = {**base, "pages": len(reader.pages)}
            yield from _documents(_page_texts(reader), uri, title, meta, max_bytes)
        except (PyPdfError, ValueError, KeyError, TypeError, AttributeError) as err:
            log.warning("unreadable PDF %s", uri, exc_info=err)
            reason = " ".join(str(err).split())[:160]
            yield LoadFailure(uri, f"unreadable PDF ({reason}); re-export it or convert it to text")


def _title(reader: Any) -> str | None:
    """The document title from the PDF metadata, if it has a usable one."""
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception as err:  # noqa: BLE001 - broken metadata must not fail the document
        log.debug("unreadable PDF metadata: %s", err)
        return None
    title = " ".join(str(title).split()) if title else ""
    return title or None


def _page_texts(reader: Any) -> Iterator[tuple[int, str]]:
    """(page number from 1, text) per page; a page whose text cannot be read is empty."""
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception as err:  # noqa: BLE001 - one bad page must not lose the others
            log.warning("page %d: text extraction failed: %s", number, err, exc_info=err)
            text = ""
        yield number, text.replace("\f", "\n").replace("\x00", "")


def _documents(
    pages: Iterator[tuple[int, str]], uri: str, title: str, meta: dict[str, Any], limit: int
) -> Iterator[LoadResult]:
    """Group page texts into one document, or into parts of at most ``limit`` characters."""
    groups = _group_pages(pages, limit)
    first = next(groups, None)
    second = next(groups, None)
    if first is None or not first[2].replace("\f", "").strip():
        yield LoadFailure(uri, "PDF has no extractable text (scanned images?); run OCR first")
        return
    if second is None:
        yield LoadedDocument(uri, title, first[2], {**meta, "chars": len(first[2])})
        return
    parts = (g for g in _prepend(first, second, groups) if g[2].replace("\f", "").strip())
    for number, (start, end, text) in enumerate(parts, start=1):
        yield LoadedDocument(
            f"{uri}#part={number}",
            f"{title} (part {number})",
            text,
            {**meta, "part": number, "source_uri": uri, "first_page": start,
             "last_page": end, "chars": len(text)},
        )


def _prepend(
    first: tuple[int, int, str], second: tuple[int, int, str],
    rest: Iterator[tuple[int, int, str]],
) -> Iterator[tuple[int, int, str]]:
    """The two groups already read, then the rest."""
    yield first
    yield second
    yield from rest


def _group_pages(
    pages: Iterator[tuple[int, str]], limit: int
) -> Iterator[tuple[int, int, str]]:
    """(first page, last page, text joined by form feeds), each text at most ``limit`` chars.

    A single page longer than ``limit`` is cut into pieces (same page numbers).
    """
    buffer: list[str] = []
    size = 0
    start = 1
    last = 0
    for number, text in pages:
        for piece in [text[i : i + limit] for i in range(0, len(text), limit)] or [""]:
            if buffer and size + 1 + len(piece) > limit:
                yield start, last, "\f".join(buffer)
                buffer, size, start = [], 0, number
            buffer.append(piece)
            size += len(piece) + (1 if len(buffer) > 1 else 0)
            last = number
    if buffer:
        yield start, last, "\f".join(buffer)
