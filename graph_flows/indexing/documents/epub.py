"""EPUB 2/3 as Markdown: its chapters in reading order, each through the HTML converter.

An EPUB is a zip container: ``META-INF/container.xml`` names the package document (OPF),
whose ``spine`` lists the chapters (XHTML) in reading order. Each chapter goes through
:func:`~graph_flows.indexing.documents.html_text.html_to_text`, so its headings become
section paths, its lists and tables stay readable; a chapter without a heading of its own
gets its HTML title as one. Title: the book's ``dc:title``.

Read with the standard ``zipfile`` and ``defusedxml`` (XML with entity expansion refused)
rather than EbookLib, whose AGPL-3.0 licence does not fit an Apache-2.0 project; the
container was checked before (:func:`~graph_flows.indexing.documents.containers.check_zip`).
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from defusedxml import ElementTree

from graph_flows.indexing.documents.containers import Unreadable
from graph_flows.indexing.documents.html_text import html_to_text

NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container",
      "opf": "http://www.idpf.org/2007/opf", "dc": "http://purl.org/dc/elements/1.1/"}
HTML_TYPES = frozenset({"application/xhtml+xml", "text/html"})


def convert_epub(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of an EPUB file."""
    archive = zipfile.ZipFile(path)
    try:
        opf_path = _package_path(archive)
        package = ElementTree.fromstring(archive.read(opf_path))
    except (KeyError, ElementTree.ParseError) as err:
        archive.close()
        raise Unreadable(f"corrupt EPUB (no readable package document: {err}); "
                         "re-export it") from err
    title_node = package.find("opf:metadata/dc:title", NS)
    title = " ".join((title_node.text or "").split()) if title_node is not None else ""
    chapters = _spine(package, posixpath.dirname(opf_path))

    def blocks() -> Iterator[str]:
        with archive:
            for name in chapters:
                if name not in archive.NameToInfo:
                    continue
                heading, text = html_to_text(archive.read(name))
                if not text.strip():
                    continue
                if heading and not text.lstrip().startswith("#") and heading != title:
                    text = f"# {heading}\n\n{text}"
                yield text + "\n\n"

    return title or None, blocks(), {"chapters": len(chapters)}


def _package_path(archive: zipfile.ZipFile) -> str:
    container = ElementTree.fromstring(archive.read("META-INF/container.xml"))
    rootfile = container.find("c:rootfiles/c:rootfile", NS)
    if rootfile is None or not rootfile.get("full-path"):
        raise KeyError("container.xml names no package document")
    return str(rootfile.get("full-path"))


def _spine(package: Any, base: str) -> list[str]:
    """Zip member names of the spine's (X)HTML documents, in reading order."""
    manifest = {item.get("id"): item for item in package.iterfind("opf:manifest/opf:item", NS)}
    names = []
    for ref in package.iterfind("opf:spine/opf:itemref", NS):
        item = manifest.get(ref.get("idref"))
        if item is None or item.get("media-type") not in HTML_TYPES:
            continue
        href = unquote((item.get("href") or "").split("#", 1)[0])
        names.append(posixpath.normpath(posixpath.join(base, href)))
    return names
