"""Office, e-book, e-mail and data files written by their own libraries for the loader tests.

Nothing here is a third-party file: each function builds its file with python-docx,
python-pptx, openpyxl, odfpy, msoffcrypto-tool, ``zipfile`` or ``email`` and returns its
path. The contents are small invented facts the tests look for.
"""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage
from pathlib import Path


def write_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Travel Policy", level=1)
    document.add_paragraph("Staff book trains for trips under four hours.")
    document.add_heading("Approvals", level=2)
    document.add_paragraph("Ask the team lead first.", style="List Bullet")
    document.add_paragraph("Then file the form.", style="List Bullet")
    document.add_paragraph("Open the portal.", style="List Number")
    document.add_paragraph("Upload the receipts.", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for row, cells in zip(table.rows, [("City", "Daily allowance"), ("Lisbon", "85 EUR"),
                                       ("Oslo", "140 EUR")], strict=True):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    document.add_paragraph("Receipts are kept for seven years.")
    document.save(path)
    return path


def write_pptx(path: Path) -> Path:
    from pptx import Presentation

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "Quarterly Review"
    first.placeholders[1].text = "Northwind Traders"
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Launch Plan"
    body = second.placeholders[1].text_frame
    body.text = "Beta opens in Porto"
    sub = body.add_paragraph()
    sub.text = "Marta Ribeiro leads the beta"
    sub.level = 1
    second.notes_slide.notes_text_frame.text = "Mention the Porto office lease."
    deck.save(path)
    return path


def write_xlsx(path: Path) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Item", "Amount", "Owner"])
    for n in range(2, 12):
        sheet.append([f"Line {n}", n * 10, "Finance"])
    sheet.append(["Rent", 1200, "Facilities"])  # row 12
    notes = book.create_sheet("Notes")
    notes.append(["The budget was approved by Ingrid Solberg."])
    book.save(path)
    return path


def write_eml(path: Path, *, body: bool = True, attachment: bool = False) -> Path:
    message = EmailMessage()
    message["Subject"] = "Server migration window"
    message["From"] = "Ana Lima <ana@example.org>"
    message["To"] = "ops@example.org"
    message["Date"] = "Tue, 03 Mar 2026 09:30:00 +0000"
    if body:
        message.set_content("The migration of the billing server starts on Saturday at 22:00."
                            "\n\nRollback owner: Kenji Mori.\n")
    if attachment:
        message.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf",
                               filename="plan.pdf")
    path.write_bytes(bytes(message))
    return path


def write_epub(path: Path) -> Path:
    container = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
                 'opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/book.opf"'
                 ' media-type="application/oebps-package+xml"/></rootfiles></container>')
    opf = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
           '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Harbour Tales'
           '</dc:title></metadata><manifest>'
           '<item id="c2" href="two.xhtml" media-type="application/xhtml+xml"/>'
           '<item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/></manifest>'
           '<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>')
    page = ('<?xml version="1.0" encoding="utf-8"?><!DOCTYPE html><html xmlns="http://www.w3.'
            'org/1999/xhtml"><head><title>{0}</title></head><body><h1>{0}</h1><p>{1}</p>'
            '</body></html>')
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("OEBPS/book.opf", opf)
        archive.writestr("OEBPS/one.xhtml", page.format(
            "The Lighthouse", "Keeper Elsa Varga lit the lamp every night."))
        archive.writestr("OEBPS/two.xhtml", page.format(
            "The Storm", "The ferry from Bergen waited out the storm."))
    return path


def write_odt(path: Path) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, List, ListItem, P

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Garden Rules"))
    document.text.addElement(P(text="Water the tomatoes before nine."))
    items = List()
    for text in ("Close the gate", "Return the tools"):
        item = ListItem()
        item.addElement(P(text=text))
        items.addElement(item)
    document.text.addElement(items)
    document.save(str(path))
    return path


def write_encrypted_docx(path: Path, tmp: Path) -> Path:
    from msoffcrypto.format.ooxml import OOXMLFile

    plain = write_docx(tmp / "plain-for-encryption.docx")
    with plain.open("rb") as source, path.open("wb") as target:
        OOXMLFile(source).encrypt("secret", target)
    plain.unlink()
    return path


def write_zip_bomb(path: Path, unpacked_mb: int) -> Path:
    """A zip container (named as a Word or Excel file) with one member of zeros."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * (1 << 20)
            for _ in range(unpacked_mb):
                member.write(block)
    return path


def write_sheet_with_empty_rows(path: Path, empty_rows: int, declared_only: bool) -> Path:
    """An Excel file whose sheet has 3 filled rows, then ``empty_rows`` empty ones: only
    declared in its dimension (``declared_only``) or written as empty styled cells."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Stock"
    sheet.append(["Part", "Count"])
    sheet.append(["Bolt", 40])
    sheet.append(["Nut", 75])
    buffer = io.BytesIO()
    book.save(buffer)
    last = 3 + empty_rows
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(path, "w",
                                                           zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                xml = data.decode()
                xml = xml.replace('<dimension ref="A1:B3"/>', f'<dimension ref="A1:XFD{last}"/>')
                if not declared_only:
                    rows = "".join(f'<row r="{n}"><c r="A{n}" s="0"/></row>'
                                   for n in range(4, last + 1))
                    xml = xml.replace("</sheetData>", rows + "</sheetData>")
                data = xml.encode()
            target.writestr(info, data)
    return path
