"""Office, e-book, e-mail and data files converted to Markdown that the chunker reads.

Each format has a converter returning (title, Markdown blocks, metadata): Word
(:mod:`.word`), PowerPoint (:mod:`.slides`), Excel and CSV/TSV (:mod:`.sheets`), EPUB
(:mod:`.epub`), e-mail (:mod:`.mail`), OpenDocument text (:mod:`.odt`), JSON, JSON Lines and
RTF (:mod:`.records`). Their headings (a slide's number and title, a sheet's name, an
e-mail's subject, a document's headings) become the section path of every chunk, so a
citation can say where a passage is.

:func:`load_converted` guards and bounds the conversion, then yields the documents:

* a zip container is checked before any library opens it (renamed files, password
  protection, more than ``ZIP_RATIO`` x ``max_bytes`` unpacked: a zip bomb; see
  :mod:`.containers`); a text format holding a PDF, zip or Office binary is named as such;
* formats read whole (JSON, RTF, e-mail) must be at most ``max_bytes`` long;
* the converted text is cut into parts of at most ``max_bytes`` characters, as a long
  Markdown file is (:mod:`.parts`), and may total at most ``TEXT_RATIO`` x ``max_bytes``;
* the whole text is converted before the first part is yielded: a file that fails halfway
  yields one :class:`LoadFailure` and nothing else, so nothing of it is half-stored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.containers import Unreadable, check_zip, renamed_binary
from graph_flows.indexing.documents.epub import convert_epub
from graph_flows.indexing.documents.mail import convert_eml
from graph_flows.indexing.documents.odt import convert_odt
from graph_flows.indexing.documents.parts import as_documents, split_parts
from graph_flows.indexing.documents.records import convert_json, convert_jsonl, convert_rtf
from graph_flows.indexing.documents.sheets import convert_csv, convert_xlsx
from graph_flows.indexing.documents.slides import convert_pptx
from graph_flows.indexing.documents.types import LoadedDocument, LoadFailure, LoadResult
from graph_flows.indexing.documents.word import convert_docx

ZIP_RATIO = 8
TEXT_RATIO = 4
MB = 1 << 20
log = logging.getLogger(__name__)

Converted = tuple[str | None, Iterator[str], dict[str, Any]]


@dataclass(frozen=True)
class Format:
    """How one file type is read."""

    label: str
    """The format in a message: "a Word file"."""
    media_type: str
    convert: Callable[[Path], Converted]
    zipped: bool = False
    """A zip container, checked by :func:`~.containers.check_zip` first."""
    whole: bool = False
    """Read into memory whole: at most ``max_bytes`` long."""
    heading_title: bool = False
    """Without a title of its own, the document is named by its first heading (else by its
    file name)."""


_OOXML = "application/vnd.openxmlformats-officedocument."
FORMATS: dict[str, Format] = {
    ".docx": Format("Word file", _OOXML + "wordprocessingml.document", convert_docx, True,
                    heading_title=True),
    ".pptx": Format("PowerPoint file", _OOXML + "presentationml.presentation", convert_pptx,
                    True),
    ".xlsx": Format("Excel file", _OOXML + "spreadsheetml.sheet", convert_xlsx, True),
    ".odt": Format("OpenDocument text", "application/vnd.oasis.opendocument.text",
                   convert_odt, True, heading_title=True),
    ".epub": Format("EPUB book", "application/epub+zip", convert_epub, True,
                    heading_title=True),
    ".csv": Format("CSV file", "text/csv", convert_csv),
    ".tsv": Format("TSV file", "text/tab-separated-values", convert_csv),
    ".eml": Format("e-mail", "message/rfc822", convert_eml, whole=True),
    ".json": Format("JSON file", "application/json", convert_json, whole=True),
    ".jsonl": Format("JSON Lines file", "application/jsonl", convert_jsonl),
    ".ndjson": Format("JSON Lines file", "application/x-ndjson", convert_jsonl),
    ".rtf": Format("RTF file", "application/rtf", convert_rtf, whole=True),
}


def load_converted(
    path: Path, uri: str, base: dict[str, Any], max_bytes: int
) -> Iterator[LoadResult]:
    """The documents of a converted file, or one failure (see the module text)."""
    fmt = FORMATS[path.suffix.lower()]
    try:
        title, parts, meta = _convert(path, fmt, base["bytes"], max_bytes)
    except Unreadable as err:
        yield LoadFailure(uri, str(err))
        return
    except OSError:
        raise  # the loader's one line: cannot read the file
    except Exception as err:  # noqa: BLE001 - a library's error on one file: reported, logged
        log.warning("cannot convert %s", uri, exc_info=err)
        said = str(err).replace(str(path), path.name)  # a reason never shows the path
        reason = " ".join(f"{type(err).__name__}: {said}".split())[:160]
        yield LoadFailure(uri, f"unreadable {fmt.label} ({reason}); open and save it again, "
                               "or export it as PDF or text")
        return
    if not any(p.strip() for p in parts):
        yield LoadFailure(uri, f"{fmt.label} has no text; nothing to index")
        return
    meta = {**base, "media_type": fmt.media_type, **meta}
    if not fmt.heading_title:
        title = title or path.stem
    docs = list(as_documents(iter(parts), uri, path.stem, meta, True, title))
    if any(isinstance(d, LoadFailure) for d in docs):
        yield next(d for d in docs if isinstance(d, LoadFailure))
        return
    yield from (d for d in docs if isinstance(d, LoadedDocument))


def _convert(path: Path, fmt: Format, size: int, max_bytes: int
             ) -> tuple[str | None, list[str], dict[str, Any]]:
    """(title, text parts, metadata) of a file, converted whole."""
    if fmt.whole and size > max_bytes:
        raise Unreadable(f"{fmt.label} over the {max_bytes / MB:g} MB limit; split it or "
                         "raise KRAG_MAX_UPLOAD_MB")
    if fmt.zipped:
        check_zip(path, fmt.label, ZIP_RATIO * max_bytes)
    elif reason := renamed_binary(path, fmt.label):
        raise Unreadable(reason)
    title, blocks, meta = fmt.convert(path)
    capped = _capped(blocks, TEXT_RATIO * max_bytes, fmt.label)
    parts = list(split_parts(capped, max_bytes, ("\n\n", "\n", " ")))
    return title, parts, meta


def _capped(blocks: Iterator[str], limit: int, label: str) -> Iterator[str]:
    """The blocks, until their text passes ``limit`` characters (then Unreadable)."""
    total = 0
    for block in blocks:
        total += len(block)
        if total > limit:
            raise Unreadable(f"{label} gives over {limit / MB:g} MB of text; split it or "
                             "raise KRAG_MAX_UPLOAD_MB")
        yield block
