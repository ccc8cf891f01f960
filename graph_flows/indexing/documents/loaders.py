"""Turn files and folders into plain text documents: Markdown, text, PDF and HTML here;
Word, PowerPoint, Excel, CSV/TSV, EPUB, e-mail, OpenDocument text, RTF, JSON and JSON Lines
converted to Markdown by :mod:`~graph_flows.indexing.documents.formats`.

:func:`load_path` yields one :class:`LoadedDocument` per file, or a :class:`LoadFailure`
whose ``reason`` is one line saying what is wrong and what to do. Folders are walked
recursively in sorted order; hidden files and folders (name starting with ".") are skipped.
Nothing is raised for a bad file: the caller reports failures and carries on.

Oversized files (design decision). Text is never held beyond ``max_bytes`` characters at a
time. A ``.md``/``.txt`` file or a PDF whose text is longer than ``max_bytes`` is read as a
stream and yielded as several documents, *parts*, each at most ``max_bytes`` characters (plus
the heading path below), cut at a paragraph break (PDF: at a page break) when possible:

* ``uri`` = ``<file uri>#part=<n>`` (n from 1), ``title`` = ``<title> (part <n>)``;
* ``metadata`` has ``part`` and ``source_uri`` (the file's uri), plus ``first_page`` /
  ``last_page`` for PDFs;
* a Markdown part after the first starts with the heading path in force where it was cut,
  so its chunks keep their section context.

The caller handles parts like any document (clean, hash, chunk); memory stays bounded by
one part. An HTML file over ``max_bytes`` bytes is a :class:`LoadFailure` (the HTML parser
needs the whole tree). Text files are decoded as UTF-8 (a BOM is dropped), else as
Windows-1252 when that decodes cleanly; a NUL byte or no valid decoding means "binary".
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.encoding import read_blocks, sniff_encoding
from graph_flows.indexing.documents.formats import FORMATS, load_converted
from graph_flows.indexing.documents.html_text import html_to_text
from graph_flows.indexing.documents.parts import as_documents, markdown_title, split_parts
from graph_flows.indexing.documents.pdf import load_pdf
from graph_flows.indexing.documents.types import LoadedDocument, LoadFailure, LoadResult

MEDIA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".pdf": "application/pdf",
    ".html": "text/html",
    ".htm": "text/html",
    **{suffix: fmt.media_type for suffix, fmt in FORMATS.items()},
}
SUPPORTED_SUFFIXES = frozenset(MEDIA_TYPES)
log = logging.getLogger(__name__)


def load_text(text: str, uri: str = "inline", title: str | None = None) -> LoadedDocument:
    """A document from a string (title: given, else the first Markdown heading, else None).

    Raises ValueError when the text is empty or only whitespace.
    """
    text = text.replace("\x00", "")
    if not text.strip():
        raise ValueError("text is empty; nothing to index")
    return LoadedDocument(
        uri=uri,
        title=title or markdown_title(text),
        text=text,
        metadata={"media_type": "text/markdown", "chars": len(text)},
    )


def load_path(path: Path, *, max_bytes: int) -> Iterator[LoadResult]:
    """Documents (or failures) for a file, or for every file under a folder."""
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be > 0, got {max_bytes}")
    path = Path(path)
    if path.is_dir():
        for file in _walk(path):
            yield from load_file(file, max_bytes=max_bytes)
    elif path.exists():
        yield from load_file(path, max_bytes=max_bytes)
    else:
        yield LoadFailure(str(path), "no such file or folder; check the path")


def _walk(folder: Path) -> list[Path]:
    """Files under ``folder`` sorted by path, hidden ones skipped, symlinked dirs not followed."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(Path(root) / name for name in files if not name.startswith("."))
    return sorted(found, key=lambda p: p.relative_to(folder).parts)


def load_file(path: Path, *, max_bytes: int) -> Iterator[LoadResult]:
    """Documents (one, or several parts) or one failure for a single file."""
    uri = _uri(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        yield LoadFailure(uri, f"unsupported file type '{suffix or path.name}'; "
                               f"convert it to one of {supported}")
        return
    try:
        size = path.stat().st_size
        if size == 0:
            yield LoadFailure(uri, "empty file; nothing to index")
            return
        base = {"path": str(path.resolve()), "media_type": MEDIA_TYPES[suffix], "bytes": size}
        if suffix == ".pdf":
            yield from load_pdf(path, uri, base, max_bytes)
        elif suffix in {".html", ".htm"}:
            yield _load_html(path, uri, base, max_bytes)
        elif suffix in FORMATS:
            yield from load_converted(path, uri, base, max_bytes)
        else:
            yield from _load_plain(path, uri, base, max_bytes, suffix != ".txt")
    except OSError as err:
        log.warning("cannot read %s", uri, exc_info=err)
        yield LoadFailure(uri, f"cannot read file ({err.strerror or err}); check permissions")


def _uri(path: Path) -> str:
    """The document identity: the absolute ``file://`` URI of the path."""
    return path.resolve().as_uri()


def _load_plain(
    path: Path, uri: str, base: dict[str, Any], max_bytes: int, markdown: bool
) -> Iterator[LoadResult]:
    """A Markdown or text file: whole, or in parts when longer than ``max_bytes``."""
    encoding = sniff_encoding(path)
    if encoding is None:
        yield LoadFailure(uri, "looks binary (NUL bytes or not UTF-8/Windows-1252 text); "
                               "index only text, Markdown, HTML or PDF files")
        return
    meta = {**base, "encoding": "utf-8" if encoding == "utf-8-sig" else encoding}
    parts = split_parts(read_blocks(path, encoding), max_bytes, ("\n\n", "\n", " "))
    yield from as_documents(parts, uri, path.stem, meta, markdown)


def _load_html(path: Path, uri: str, base: dict[str, Any], max_bytes: int) -> LoadResult:
    """An HTML file converted to Markdown-like text (see :mod:`html_text`)."""
    if base["bytes"] > max_bytes:
        limit_mb = max_bytes / (1 << 20)
        return LoadFailure(uri, f"HTML file over the {limit_mb:g} MB limit; split it or "
                                "raise KRAG_MAX_UPLOAD_MB")
    data = path.read_bytes()
    if b"\x00" in data:
        return LoadFailure(uri, "looks binary (NUL bytes); index only text, Markdown, HTML "
                                "or PDF files")
    title, text = html_to_text(data)
    if not text.strip():
        return LoadFailure(uri, "HTML page has no visible text; nothing to index")
    return LoadedDocument(uri, title or markdown_title(text) or path.stem, text,
                          {**base, "chars": len(text)})
