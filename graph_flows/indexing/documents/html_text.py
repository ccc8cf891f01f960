"""HTML to Markdown-like plain text with BeautifulSoup (the html.parser backend, no extras).

Dropped: ``script``, ``style``, ``nav``, ``footer``, ``noscript``, ``template``, ``iframe``,
``svg``, ``head`` (after reading ``<title>``), comments, the doctype and XML declarations.
Kept as structure: headings become ``#`` lines, list items ``- `` lines, ``<pre>`` blocks
fenced code, table rows one line each with cells separated by `` | ``, ``<br>`` a line
break; block elements are separated by blank lines. Whitespace inside running text is
collapsed as a browser would.
"""

from __future__ import annotations

import re

from bs4 import (
    BeautifulSoup,
    Comment,
    Declaration,
    Doctype,
    NavigableString,
    ProcessingInstruction,
    Tag,
)

DROPPED_TAGS = ("script", "style", "nav", "footer", "noscript", "template", "iframe", "svg")
BLOCK_TAGS = (
    "p", "div", "section", "article", "main", "header", "aside", "blockquote", "ul", "ol",
    "table", "figure", "figcaption", "dl", "dt", "dd", "form", "address", "details", "summary",
)
_HEADING = re.compile(r"^h([1-6])$")
_NOT_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)


def html_to_text(html: bytes | str) -> tuple[str | None, str]:
    """(title or None, text) of an HTML page."""
    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text(" ").split()) if title_tag else None
    for tag in soup.find_all([*DROPPED_TAGS, "head", "title"]):
        tag.decompose()
    for node in soup.find_all(string=lambda s: isinstance(s, _NOT_TEXT)):
        node.extract()  # comments, <!DOCTYPE ...>, <?xml ...?>
    _collapse_whitespace(soup)
    _mark_structure(soup)
    return title or None, _tidy(soup.get_text())


def _collapse_whitespace(soup: BeautifulSoup) -> None:
    """Collapse whitespace runs in text nodes, except inside <pre>."""
    for node in list(soup.find_all(string=True)):
        if node.find_parent("pre") is None:
            node.replace_with(re.sub(r"\s+", " ", str(node)))


def _mark_structure(soup: BeautifulSoup) -> None:
    """Replace structural elements by text carrying Markdown-like markers."""
    for pre in soup.find_all("pre"):
        pre.replace_with(NavigableString(f"\n\n```\n{pre.get_text().strip(chr(10))}\n```\n\n"))
    for tag in soup.find_all(_HEADING):
        level = int(_HEADING.match(tag.name).group(1))  # type: ignore[union-attr]
        text = " ".join(tag.get_text(" ").split())
        tag.replace_with(NavigableString(f"\n\n{'#' * level} {text}\n\n" if text else "\n"))
    for br in soup.find_all("br"):
        br.replace_with(NavigableString("\n"))
    for row in soup.find_all("tr"):
        cells = [" ".join(c.get_text(" ").split()) for c in row.find_all(["td", "th"])]
        row.replace_with(NavigableString("\n" + " | ".join(c for c in cells if c) + "\n"))
    for item in soup.find_all("li"):
        item.insert(0, NavigableString("\n- "))
    for tag in soup.find_all(BLOCK_TAGS):
        if isinstance(tag, Tag):
            tag.insert_before(NavigableString("\n\n"))
            tag.insert_after(NavigableString("\n\n"))


def _tidy(text: str) -> str:
    """Strip each line outside code fences and collapse blank-line runs."""
    lines: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if line.strip() == "```":
            in_code = not in_code
            lines.append("```")
        elif in_code:
            lines.append(line.rstrip())
        else:
            lines.append(" ".join(line.split()))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
