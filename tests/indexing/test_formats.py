"""Office, e-book, e-mail and data files: the text each loader extracts says what the file
visibly says, with its structure (headings, lists, table rows, slides, sheets), and bad
files are one line each. No database: the end-to-end runs are in tests/ui/test_ingest_formats.py.
"""

from __future__ import annotations

import time
import zipfile
from pathlib import Path

import pytest

from graph_flows.indexing.documents.chunking import chunk_text
from graph_flows.indexing.documents.clean import clean_text
from graph_flows.indexing.documents.loaders import (
    SUPPORTED_SUFFIXES,
    LoadedDocument,
    LoadFailure,
    load_path,
)
from tests import format_fixtures as ff

MB = 1 << 20


def one(path: Path, max_bytes: int = 50 * MB) -> LoadedDocument:
    (item,) = list(load_path(path, max_bytes=max_bytes))
    assert isinstance(item, LoadedDocument), item
    return item


def why(path: Path, max_bytes: int = 50 * MB) -> str:
    (item,) = list(load_path(path, max_bytes=max_bytes))
    assert isinstance(item, LoadFailure), item
    assert "\n" not in item.reason
    return item.reason


def test_every_issue_format_is_supported() -> None:
    wanted = {".docx", ".pptx", ".xlsx", ".csv", ".epub", ".eml", ".odt", ".rtf", ".json",
              ".jsonl"}
    assert wanted <= SUPPORTED_SUFFIXES


def test_word_headings_lists_and_table_rows(tmp_path: Path) -> None:
    doc = one(ff.write_docx(tmp_path / "policy.docx"))
    assert doc.title == "Travel Policy"
    assert "# Travel Policy\n\nStaff book trains for trips under four hours." in doc.text
    assert "## Approvals" in doc.text
    assert "- Ask the team lead first.\n- Then file the form.\n" in doc.text
    assert "1. Open the portal.\n2. Upload the receipts.\n" in doc.text
    assert "- City: Lisbon; Daily allowance: 85 EUR\n- City: Oslo; Daily allowance: 140 EUR" \
        in doc.text
    chunks = chunk_text(clean_text(doc.text), size=300, overlap=0)
    oslo = next(c for c in chunks if "Oslo" in c)
    assert oslo.startswith("# Travel Policy\n## Approvals\n\n")  # the section path
    assert "Daily allowance: 140 EUR" in oslo  # the row kept whole, its header with it


def test_slides_keep_number_title_bullets_and_notes(tmp_path: Path) -> None:
    doc = one(ff.write_pptx(tmp_path / "review.pptx"))
    assert doc.title == "Quarterly Review" and doc.metadata["slides"] == 2
    assert doc.text.startswith("# Slide 1: Quarterly Review\n\nNorthwind Traders")
    assert "# Slide 2: Launch Plan\n\n- Beta opens in Porto\n  - Marta Ribeiro leads the beta" \
        in doc.text
    assert "## Notes\n\nMention the Porto office lease." in doc.text
    chunks = chunk_text(clean_text(doc.text), size=200, overlap=0)
    notes = next(c for c in chunks if "lease" in c)
    assert notes.startswith("# Slide 2: Launch Plan\n## Notes")


def test_sheets_keep_names_header_and_row_numbers(tmp_path: Path) -> None:
    doc = one(ff.write_xlsx(tmp_path / "budget.xlsx"))
    assert doc.metadata["sheets"] == ["Budget", "Notes"]
    assert "# Sheet: Budget\n\n- row 2: Item: Line 2; Amount: 20; Owner: Finance" in doc.text
    assert "- row 12: Item: Rent; Amount: 1200; Owner: Facilities" in doc.text
    assert "# Sheet: Notes\n\n- row 1: The budget was approved by Ingrid Solberg." in doc.text
    rent = next(c for c in chunk_text(clean_text(doc.text), size=150, overlap=0)
                if "Rent" in c)
    assert rent.startswith("# Sheet: Budget\n\n") and "row 12" in rent


def test_csv_and_tsv_rows(tmp_path: Path) -> None:
    (tmp_path / "staff.csv").write_text("Name;Team;Room\nAda;Data;B12\n\nLin;Ops;C3\n",
                                        encoding="utf-8")
    (tmp_path / "rooms.tsv").write_text("Room\tFloor\nB12\t2\n", encoding="utf-8")
    (tmp_path / "wide.csv").write_bytes("Name,City\nJosé,Málaga\n".encode("utf-16"))
    assert one(tmp_path / "staff.csv").text == (
        "- row 2: Name: Ada; Team: Data; Room: B12\n- row 4: Name: Lin; Team: Ops; Room: C3\n")
    assert one(tmp_path / "rooms.tsv").text == "- row 2: Room: B12; Floor: 2\n"
    assert one(tmp_path / "wide.csv").text == "- row 2: Name: José; City: Málaga\n"


def test_email_subject_headers_and_metadata(tmp_path: Path) -> None:
    doc = one(ff.write_eml(tmp_path / "mail.eml", attachment=True))
    assert doc.title == "Server migration window"
    assert doc.text.startswith("# Server migration window\n\n- From: Ana Lima <ana@example.org>")
    assert "- Date: 2026-03-03T09:30:00+00:00" in doc.text
    assert "Rollback owner: Kenji Mori." in doc.text and "- Attachment: plan.pdf" in doc.text
    meta = doc.metadata
    assert (meta["subject"], meta["from"], meta["date"], meta["attachments"]) == (
        "Server migration window", "Ana Lima <ana@example.org>", "2026-03-03T09:30:00+00:00",
        ["plan.pdf"])


def test_epub_chapters_in_spine_order(tmp_path: Path) -> None:
    doc = one(ff.write_epub(tmp_path / "tales.epub"))
    assert doc.title == "Harbour Tales" and doc.metadata["chapters"] == 2
    assert doc.text.index("# The Lighthouse") < doc.text.index("# The Storm")
    assert "Keeper Elsa Varga lit the lamp every night." in doc.text
    assert "xml version" not in doc.text and "DOCTYPE" not in doc.text


def test_odt_rtf_json_and_jsonl(tmp_path: Path) -> None:
    odt = one(ff.write_odt(tmp_path / "garden.odt"))
    assert odt.text.startswith("# Garden Rules\n\nWater the tomatoes before nine.")
    assert "- Close the gate\n- Return the tools\n" in odt.text
    (tmp_path / "memo.rtf").write_text(
        r"{\rtf1\ansi{\fonttbl\f0\fswiss Helvetica;}\f0\pard Memo for the crew.\par "
        r"The dock opens at six.\par}", encoding="ascii")
    rtf = one(tmp_path / "memo.rtf")
    assert "Memo for the crew." in rtf.text and "The dock opens at six." in rtf.text
    (tmp_path / "items.json").write_text(
        '{"shop": "Harbour Store", "items": [{"name": "Rope", "price": 12.5},'
        ' {"name": "Anchor", "stock": {"Bergen": 3}}]}', encoding="utf-8")
    js = one(tmp_path / "items.json")
    assert js.title == "items"
    assert js.text == ("shop: Harbour Store\n\n# items\n\n- item 1: name: Rope; price: 12.5\n"
                       "- item 2: name: Anchor; stock.Bergen: 3\n\n")
    (tmp_path / "log.jsonl").write_text('{"event": "boot"}\n\n{"event": "ready", "ok": true}\n',
                                        encoding="utf-8")
    assert one(tmp_path / "log.jsonl").text == (
        "- line 1: event: boot\n- line 3: event: ready; ok: true\n")
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    assert why(tmp_path / "bad.jsonl").startswith("not valid JSON (Expecting value at line 2")


# -- bad input: one line each, nothing half-stored -------------------------------------------
def test_renamed_pdf_and_old_office_files(tmp_path: Path) -> None:
    (tmp_path / "report.docx").write_bytes(b"%PDF-1.4\n1 0 obj <<>> endobj\n%%EOF\n")
    assert why(tmp_path / "report.docx") == "this is a PDF, not a Word file; rename it to .pdf"
    (tmp_path / "old.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600)
    assert "old binary Office file" in why(tmp_path / "old.xlsx")
    (tmp_path / "data.csv").write_bytes(b"%PDF-1.4\n%%EOF\n")
    assert why(tmp_path / "data.csv") == "this is a PDF, not a CSV file; rename it to .pdf"
    (tmp_path / "notes.docx").write_text("just text", encoding="utf-8")
    assert why(tmp_path / "notes.docx").startswith("not a Word file (no zip container inside)")


def test_password_protected_office_file(tmp_path: Path) -> None:
    path = ff.write_encrypted_docx(tmp_path / "locked.docx", tmp_path)
    assert why(path) == "password-protected Word file; remove the password and index it again"


@pytest.mark.parametrize("name", ["bomb.docx", "bomb.xlsx"])
def test_zip_bomb_is_refused_before_it_is_unpacked(tmp_path: Path, name: str) -> None:
    path = ff.write_zip_bomb(tmp_path / name, unpacked_mb=64)
    assert path.stat().st_size < MB
    started = time.monotonic()
    reason = why(path, max_bytes=MB)  # 8 MB of unpacked members allowed
    assert "unpacks to 64 MB, over the 8 MB limit (a zip bomb?)" in reason
    assert time.monotonic() - started < 1.0


def test_empty_and_textless_files(tmp_path: Path) -> None:
    (tmp_path / "empty.xlsx").write_bytes(b"")
    assert why(tmp_path / "empty.xlsx") == "empty file; nothing to index"
    import openpyxl

    openpyxl.Workbook().save(tmp_path / "blank.xlsx")
    assert why(tmp_path / "blank.xlsx") == "Excel file has no text; nothing to index"
    only = ff.write_eml(tmp_path / "only.eml", body=False, attachment=True)
    assert why(only) == ("e-mail with no text, only attachments (plan.pdf); save the "
                         "attachments and index them")
    (tmp_path / "pgp.eml").write_text(
        'From: a@example.org\nContent-Type: multipart/encrypted; boundary=x; '
        'protocol="application/pgp-encrypted"\n\n--x\nContent-Type: application/pgp-encrypted'
        '\n\nVersion: 1\n--x--\n', encoding="utf-8")
    assert why(tmp_path / "pgp.eml").startswith("encrypted e-mail")


@pytest.mark.parametrize("declared_only", [True, False], ids=["declared", "written"])
def test_a_million_empty_rows_neither_hang_nor_fill_memory(tmp_path: Path,
                                                           declared_only: bool) -> None:
    path = ff.write_sheet_with_empty_rows(tmp_path / "stock.xlsx", 1_000_000, declared_only)
    started = time.monotonic()
    doc = one(path)
    assert time.monotonic() - started < 30  # seconds, on a loaded 2-core machine
    assert doc.text == "# Sheet: Stock\n\n- row 2: Part: Bolt; Count: 40\n" \
                       "- row 3: Part: Nut; Count: 75\n\n"
    assert ("sheets_cut_at" in doc.metadata) is (not declared_only)


def test_converted_text_over_the_cap_is_one_failure(tmp_path: Path) -> None:
    rows = "".join(f"row{n},{'x' * 80}\n" for n in range(3000))
    (tmp_path / "big.csv").write_text("key,value\n" + rows, encoding="utf-8")
    docs = list(load_path(tmp_path / "big.csv", max_bytes=64 * 1024))
    assert len(docs) == 1 and isinstance(docs[0], LoadFailure)  # nothing half-yielded
    assert "gives over" in docs[0].reason and "MB of text" in docs[0].reason
    parts = list(load_path(tmp_path / "big.csv", max_bytes=128 * 1024))
    assert len(parts) > 1 and all(isinstance(p, LoadedDocument) for p in parts)


def test_a_corrupt_container_is_one_line(tmp_path: Path) -> None:
    path = ff.write_docx(tmp_path / "ok.docx")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("word/document.xml")
    start = info.header_offset + 30 + len(info.filename)
    data[start: start + 40] = b"\xff" * 40  # the compressed document body damaged
    (tmp_path / "broken.docx").write_bytes(bytes(data))
    reason = why(tmp_path / "broken.docx")
    assert reason.startswith("unreadable Word file (") and reason.endswith(
        "open and save it again, or export it as PDF or text")
    (tmp_path / "macro.docx").write_bytes(ff.write_xlsx(tmp_path / "book.xlsx").read_bytes())
    reason = why(tmp_path / "macro.docx")  # a workbook named .docx: python-docx names the path
    assert reason.startswith("unreadable Word file (ValueError: file 'macro.docx' is not a Word")
    assert str(tmp_path) not in reason
