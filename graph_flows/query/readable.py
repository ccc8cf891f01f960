"""A passage as a person reads it: where it sits, which document, the text, the sentence cited.

- The *section path* (:func:`breadcrumb`): the chunker writes the heading path of its
  section at the top of every chunk (``# Guide`` then ``## Install``, then a blank line:
  :mod:`graph_flows.indexing.documents.chunking`); those lines are read back here as
  ``["Guide", "Install"]``. A chunk without headings (plain text, PDF, a one-paragraph
  record) is placed by its document's title, when the document's short name is not already
  that title.
- The *document's short name* (:func:`document_name`): the file name of its location (the
  last path segment of a ``file:``, ``http(s):`` or plain path), else its title, else the
  location itself; :func:`link` is the location when a browser may open it (http, https,
  file), never another scheme (``javascript:``).
- The *text without markdown markers* (:func:`plain_text`): parsed with markdown-it-py
  (CommonMark, tables on, raw HTML off: a tag in a document stays text), the text of its
  inline parts kept, one block per line.
- The *cited sentence* (:func:`cited_sentence`): the passage sentence an answer line citing
  ``[Pn]`` states (the extractive answer quotes it), else the one sharing most of its words
  with those lines (an answer model's paraphrase).

Plain functions of strings: every surface (the query graph's citations, the CLI, the UI,
MCP) shows a passage the same way.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from markdown_it import MarkdownIt

from graph_flows.query import extractive

_HEADING = re.compile(r"^\s{0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_CITE = re.compile(r"\s*\[[FP]\d+\]")
_LINKABLE = ("http", "https", "file")
_FILE_SCHEMES = ("", "file", "http", "https")
_MONTH = ("January|February|March|April|May|June|July|August|September|October|November|"
          "December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
_DATE = re.compile(rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?(?:{_MONTH})\.?"
                   rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?,?)?\s+\d{{3,4}}"
                   r"|\d{4}-\d{1,2}(?:-\d{1,2})?|(?:early|mid|late)?[- ]?\d{3}0s", re.I)
MIN_SHARED = 2
"""Content words an answer line must share with a passage sentence to cite it (paraphrase)."""


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def plain_text(markdown: str) -> str:
    """``markdown`` as text: emphasis, links, code and list markers gone, one line per
    block (a table row's cells joined by `` | ``)."""
    blocks: list[str] = []
    row: list[str] | None = None
    for tok in _parser().parse(str(markdown)):
        if tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close" and row is not None:
            blocks.append(" | ".join(row))
            row = None
        elif tok.type == "inline":
            text = _inline(tok.children or [])
            (row if row is not None else blocks).append(text)
        elif tok.type in ("fence", "code_block"):
            blocks.append(tok.content.rstrip("\n"))
    return "\n".join(b for b in blocks if b.strip())


def _inline(children: list[Any]) -> str:
    parts = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":  # its alt text, never the picture
            parts.append(_inline(child.children or []))
    return " ".join("".join(parts).split())


def split_headings(text: str) -> tuple[list[str], str]:
    """(the heading lines a chunk starts with, as plain text; the rest of the chunk)."""
    lines = str(text).split("\n")
    heads: list[str] = []
    i = 0
    while i < len(lines):
        match = _HEADING.match(lines[i])
        if match:
            heads.append(plain_text(match.group(1)) or match.group(1).strip())
        elif lines[i].strip():
            break
        i += 1
    return heads, "\n".join(lines[i:])


def document_name(title: str | None, uri: str | None) -> str:
    """The short name of a document: the file name of its location, else its title, else
    the location."""
    uri = str(uri or "")
    parts = urlsplit(uri)
    if parts.scheme.lower() in _FILE_SCHEMES:
        name = PurePosixPath(unquote(parts.path)).name
        if name:
            return name
    return str(title or "").strip() or uri


def link(uri: str | None) -> str | None:
    """``uri`` ready for a markdown link when a browser may open it (http, https, file),
    else None; spaces and brackets are percent-encoded."""
    uri = str(uri or "").strip()
    if urlsplit(uri).scheme.lower() not in _LINKABLE or any(ord(c) < 32 for c in uri):
        return None
    return quote(uri, safe=":/?#&=%@+,;~!$*'")


def breadcrumb(text: str, title: str | None, uri: str | None) -> list[str]:
    """The section path of a passage (module docstring): its chunk's headings, else its
    document's title when the short name is not that title."""
    heads, _ = split_headings(text)
    if heads:
        return heads
    title = str(title or "").strip()
    return [title] if title and title != document_name(title, uri) else []


def passage_fields(p: dict[str, Any]) -> dict[str, Any]:
    """``section`` (the breadcrumb's parts) and ``document`` (the short name) of a
    passage or cited passage."""
    text, title, uri = str(p.get("text", "")), p.get("title"), p.get("uri")
    return {"section": breadcrumb(text, title, uri), "document": document_name(title, uri)}


def citing_lines(answer: str, label: str) -> list[str]:
    """The lines of ``answer`` that cite ``[label]``, their citation labels removed."""
    mark = f"[{label}]"
    return [_CITE.sub("", ln).strip(" -") for ln in str(answer).splitlines() if mark in ln]


def cited_sentence(text: str, answer: str, label: str) -> str:
    """The sentence of passage ``text`` that the lines of ``answer`` citing ``[label]``
    state, as plain text; "" when none is cited or no sentence shares
    :data:`MIN_SHARED` content words with them."""
    lines = citing_lines(answer, label)
    if not lines:
        return ""
    _, body = split_headings(text)
    candidates = extractive.sentences(body, limit=None)
    said = " ".join(" ".join(lines).split())
    for s in candidates:  # quoted (the extractive answer clips a long one with "…")
        if " ".join(s.split())[: extractive.MAX_CHARS - 1] in said:
            return plain_text(s)
    words = extractive.terms(said)
    scored = [(len(extractive.terms(s) & words), -i, s) for i, s in enumerate(candidates)]
    best = max(scored, default=(0, 0, ""))
    return plain_text(best[2]) if best[0] >= MIN_SHARED else ""


def window(plain: str, sentence: str = "", width: int = 400) -> tuple[str, str, str]:
    """(before, the sentence, after) of ``plain`` on one line, cut to about ``width``
    characters around the sentence (``…`` where cut; no space at the joins); ("text",
    "", "") when the sentence is empty or not found."""
    flat, needle = " ".join(plain.split()), " ".join(sentence.split())
    at = flat.find(needle) if needle else -1
    if at < 0:
        return (flat if len(flat) <= width else flat[: width - 1] + "…"), "", ""
    room = max(width - len(needle), 0) // 2
    start, end = max(at - room, 0), min(at + len(needle) + room, len(flat))
    before, after = flat[start:at].rstrip(), flat[at + len(needle):end].lstrip()
    if start > 0:
        before = "…" + before.split(" ", 1)[-1] if " " in before else "…"
    if end < len(flat):
        after = after.rsplit(" ", 1)[0] + "…" if " " in after else "…"
    return before, needle, after


def is_date(name: str) -> bool:
    """Whether ``name`` is a date ("April 2024", "4 July 1776", "March 3, 1901", "2024-04",
    "the 1990s" without its article): a date, whatever type an extractor gave it."""
    flat = " ".join(str(name).split())
    flat = flat[4:] if flat.lower().startswith("the ") else flat
    return bool(_DATE.fullmatch(flat))
