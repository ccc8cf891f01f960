"""Turn files and folders into plain text documents: Markdown, text, PDF and HTML.

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

import codecs
import logging
import os
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.chunking import heading_path
from graph_flows.indexing.documents.html_text import html_to_text
from graph_flows.indexing.documents.pdf import load_pdf
from graph_flows.indexing.documents.types import LoadedDocument, LoadFailure, LoadResult

SUPPORTED_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".pdf", ".html", ".htm"})
MEDIA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".pdf": "application/pdf",
    ".html": "text/html",
    ".htm": "text/html",
}
READ_BLOCK = 1 << 20
_FALLBACK_ENCODING = "cp1252"
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\x1b")
MAX_CONTROL_RATIO = 0.01
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
        else:
            yield from _load_plain(path, uri, base, max_bytes, suffix != ".txt")
    except OSError as err:
        log.warning("cannot read %s", uri, exc_info=err)
        yield LoadFailure(uri, f"cannot read file ({err.strerror or err}); check permissions")


def _uri(path: Path) -> str:
    """The document identity: the absolute ``file://`` URI of the path."""
    return path.resolve().as_uri()


def markdown_title(text: str) -> str | None:
    """The text of the first Markdown heading, if any."""
    path = heading_path(_first_heading_region(text))
    return path[0].lstrip("#").strip() if path else None


def _first_heading_region(text: str) -> str:
    """The text up to (and including) its first heading line, to bound the scan."""
    for line in text.split("\n"):
        if line.lstrip().startswith("#") and line.strip("# \t"):
            return text[: text.index(line) + len(line)]
    return ""


def sniff_encoding(path: Path) -> str | None:
    """The encoding a text file decodes with, or None when it looks binary."""
    with path.open("rb") as handle:
        head = handle.read(READ_BLOCK)
    controls = sum(1 for byte in head if byte < 32 and byte not in _TEXT_CONTROLS)
    if controls > len(head) * MAX_CONTROL_RATIO:
        return None
    for encoding in ("utf-8-sig", _FALLBACK_ENCODING):
        decoder = codecs.getincrementaldecoder(encoding)()
        try:
            with path.open("rb") as handle:
                while block := handle.read(READ_BLOCK):
                    if b"\x00" in block:
                        return None
                    decoder.decode(block)
                decoder.decode(b"", final=True)
            return encoding
        except UnicodeDecodeError:
            continue
    return None


def _read_blocks(path: Path, encoding: str) -> Iterator[str]:
    """Decoded text of a file, one bounded block at a time, newlines normalised."""
    decoder = codecs.getincrementaldecoder(encoding)()
    carry = ""
    with path.open("rb") as handle:
        while block := handle.read(READ_BLOCK):
            text = carry + decoder.decode(block)
            carry = "\r" if text.endswith("\r") else ""  # keep \r\n pairs together
            yield (text[:-1] if carry else text).replace("\r\n", "\n")
    tail = carry + decoder.decode(b"", final=True)
    if tail:
        yield tail.replace("\r\n", "\n")


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
    parts = split_parts(_read_blocks(path, encoding), max_bytes, ("\n\n", "\n", " "))
    yield from _as_documents(parts, uri, path.stem, meta, markdown)


def split_parts(blocks: Iterator[str], limit: int, breaks: tuple[str, ...]) -> Iterator[str]:
    """Regroup streamed text into pieces of at most ``limit`` characters.

    A piece ends at the last of ``breaks`` (tried in order) found in its second half, else it
    is cut at exactly ``limit``. Memory holds at most one piece plus one block.
    """
    buffer = ""
    for block in blocks:
        buffer += block
        while len(buffer) > limit:
            cut = _cut_point(buffer, limit, breaks)
            yield buffer[:cut]
            buffer = buffer[cut:]
    if buffer:
        yield buffer


def _cut_point(text: str, limit: int, breaks: tuple[str, ...]) -> int:
    """Index just after the best break within ``text[:limit]`` (its second half), else limit."""
    for mark in breaks:
        index = text.rfind(mark, limit // 2, limit - len(mark) + 1)
        if index >= 0:
            return index + len(mark)
    return limit


def _as_documents(
    parts: Iterator[str], uri: str, stem: str, meta: dict[str, Any], markdown: bool
) -> Iterator[LoadResult]:
    """One document when the first part is the whole text, else numbered parts."""
    first = next(parts, "")
    second = next(parts, None)
    title = (markdown_title(first) if markdown else None) or stem
    if second is None:
        if not first.strip():
            yield LoadFailure(uri, "no text (only whitespace); nothing to index")
        else:
            yield LoadedDocument(uri, title, first, {**meta, "chars": len(first)})
        return
    path: list[str] = []
    for number, part in enumerate(chain([first, second], parts), start=1):
        header = "\n".join(path) + "\n\n" if path else ""
        if markdown:
            path = heading_path(part, path)
        if part.strip():
            yield LoadedDocument(
                f"{uri}#part={number}",
                f"{title} (part {number})",
                header + part,
                {**meta, "part": number, "source_uri": uri, "chars": len(part)},
            )


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
