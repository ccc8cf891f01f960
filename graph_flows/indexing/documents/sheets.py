"""Excel (.xlsx) with openpyxl, and CSV/TSV with the standard library, as readable rows.

Each worksheet becomes a section ``# Sheet: <name>`` whose rows are list items
``- row 12: Item: Rent; Amount: 1200`` (:class:`~graph_flows.indexing.documents.tables.
SheetRows`: the header row's names label every value), so a passage says which sheet and
row it comes from. Cached formula results are read (``data_only``), not formulas; hidden
sheets are read like the others; charts and pictures are left out.

Bounded work (design decision): the workbook is streamed (``read_only``) and the sheet's
declared dimension is ignored (a sheet "formatted" down to row 1,048,576 would otherwise be
padded with a million empty rows); after :data:`MAX_EMPTY_RUN` empty rows in a row the rest
of a sheet is not read (the row is logged and kept in the metadata, ``sheets_cut_at``).
CSV files are read as a stream; the delimiter is sniffed among ``, ; TAB |`` (``.tsv``:
TAB), and each record is a row (a quoted field may span lines).
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.containers import Unreadable
from graph_flows.indexing.documents.encoding import sniff_encoding
from graph_flows.indexing.documents.tables import SheetRows

MAX_EMPTY_RUN = 10_000
SNIFF_CHARS = 64 * 1024
DELIMITERS = ",;\t|"
log = logging.getLogger(__name__)


def convert_xlsx(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of an Excel workbook."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    title = (book.properties.title or "").strip() or None
    meta: dict[str, Any] = {"sheets": list(book.sheetnames)}

    def blocks() -> Iterator[str]:
        try:
            for sheet in book.worksheets:
                sheet.reset_dimensions()  # the declared size may claim a million rows
                yield from _sheet(sheet.title, sheet.iter_rows(values_only=True), meta)
        finally:
            book.close()

    return title, blocks(), meta


def _sheet(name: str, rows: Iterable[tuple[Any, ...]], meta: dict[str, Any]) -> Iterator[str]:
    """The section of one sheet (nothing when it has no filled cell)."""
    writer = SheetRows()
    empty = 0
    for number, values in enumerate(rows, start=1):
        line = writer.line(number, values)
        if line is None:
            empty = empty + 1 if not any(v is not None and v != "" for v in values) else 0
            if empty >= MAX_EMPTY_RUN:
                log.warning("sheet %r: stopped at row %d after %d empty rows", name, number,
                            empty)
                meta.setdefault("sheets_cut_at", {})[name] = number
                break
            continue
        empty = 0
        if writer.rows == 1:
            yield f"# Sheet: {name}\n\n"
        yield line + "\n"
    if (line := writer.header_only()) is not None:
        yield f"# Sheet: {name}\n\n{line}\n"
    if writer.rows:
        yield "\n"


def convert_csv(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of a CSV or TSV file."""
    encoding = sniff_encoding(path)
    if encoding is None:
        raise Unreadable("looks binary (NUL bytes or not UTF-8/UTF-16/Windows-1252 text); "
                         "export it as UTF-8 CSV")
    with path.open(encoding=encoding, newline="") as handle:
        sample = handle.read(SNIFF_CHARS)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else _delimiter(sample)
    meta = {"encoding": "utf-8" if encoding == "utf-8-sig" else encoding,
            "delimiter": delimiter}

    def blocks() -> Iterator[str]:
        writer = SheetRows()
        with path.open(encoding=encoding, newline="") as handle:
            for number, row in enumerate(csv.reader(handle, delimiter=delimiter), start=1):
                line = writer.line(number, row)
                if line is not None:
                    yield line + "\n"
            if (line := writer.header_only()) is not None:
                yield line + "\n"

    return None, blocks(), meta


def _delimiter(sample: str) -> str:
    """The delimiter of a CSV sample (a comma when the sniffer cannot tell)."""
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","
