"""The encoding of a text file, and its text read in bounded blocks.

A text file is UTF-8 (a BOM is dropped); UTF-16 when it starts with a UTF-16 byte-order mark
or every other byte of its first megabyte is NUL (Latin text saved without a mark); else
Windows-1252 when that decodes cleanly. Control characters (beyond tab, newlines, form feed
and escape) in more than 1 % of its first megabyte, a NUL byte (outside UTF-16) or no valid
decoding mean "binary".
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

READ_BLOCK = 1 << 20
_FALLBACK_ENCODING = "cp1252"
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\x1b")
MAX_CONTROL_RATIO = 0.01
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def sniff_encoding(path: Path) -> str | None:
    """The encoding a text file decodes with, or None when it looks binary."""
    with path.open("rb") as handle:
        head = handle.read(READ_BLOCK)
    if head.startswith(_UTF16_BOMS):
        return "utf-16" if _decodes(path, "utf-16") else None
    wide = _utf16_without_bom(head)
    if wide:
        return wide if _decodes(path, wide) else None
    controls = sum(1 for byte in head if byte < 32 and byte not in _TEXT_CONTROLS)
    if controls > len(head) * MAX_CONTROL_RATIO:
        return None
    for encoding in ("utf-8-sig", _FALLBACK_ENCODING):
        try:
            if _decodes(path, encoding, nul_is_binary=True):
                return encoding
        except _Binary:
            return None
    return None


def _utf16_without_bom(head: bytes) -> str | None:
    """"utf-16-le"/"utf-16-be" when every other byte of the head is NUL (Latin text saved as
    UTF-16 without a byte-order mark), else None."""
    even, odd = head[0::2], head[1::2]
    if len(head) < 8 or head.count(0) * 2 < len(head) * 0.9:
        return None
    if odd.count(0) == len(odd) and 0 not in even:
        return "utf-16-le"
    if even.count(0) == len(even) and 0 not in odd:
        return "utf-16-be"
    return None


class _Binary(Exception):
    """A NUL byte in a file that should be 8-bit text."""


def _decodes(path: Path, encoding: str, nul_is_binary: bool = False) -> bool:
    """True when the whole file decodes with ``encoding`` (read in bounded blocks)."""
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        with path.open("rb") as handle:
            while block := handle.read(READ_BLOCK):
                if nul_is_binary and b"\x00" in block:
                    raise _Binary
                decoder.decode(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def read_blocks(path: Path, encoding: str) -> Iterator[str]:
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
