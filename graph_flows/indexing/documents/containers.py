"""Checks on a file's bytes before a format library opens it.

Word, PowerPoint, Excel, OpenDocument and EPUB files are zip containers. Before any library
reads one, :func:`check_zip` makes sure that it is one (a renamed PDF or an old binary
Office file is named as such), that it is not locked (a password-protected Office file is an
OLE2 file holding an ``EncryptionInfo`` stream; a locked OpenDocument file lists
``encryption-data`` in its manifest; a DRM-locked EPUB encrypts its chapters) and that its
members unpack to at most a bounded size: the declared sizes are summed before anything is
inflated, and Python's ``zipfile`` never inflates a member beyond its declared size, so a zip
bomb is refused without being unpacked.

Every refusal is an :class:`Unreadable` whose message is one line for the user.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
PDF_MAGIC = b"%PDF"
ENCRYPTION_STREAM = "EncryptionInfo".encode("utf-16-le")
MAX_MEMBERS = 10_000
"""Entries in one container (a real document has tens to a few thousand)."""
SCAN_BLOCK = 1 << 20
MB = 1 << 20


class Unreadable(Exception):
    """A file that cannot be converted; ``str(err)`` is one line for the user."""


def check_zip(path: Path, label: str, max_unzipped: int) -> None:
    """Raise :class:`Unreadable` unless ``path`` is an unlocked zip container whose members
    unpack to at most ``max_unzipped`` bytes. ``label`` names the format ("Word file")."""
    with path.open("rb") as handle:
        head = handle.read(8)
    if not head.startswith(ZIP_MAGIC):
        raise Unreadable(not_a_container(path, head, label))
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            names = {m.filename for m in members}
            _check_sizes(members, label, max_unzipped)
            _check_locked(archive, names, label)
    except zipfile.BadZipFile as err:
        raise Unreadable(f"corrupt {label} (broken zip container: {err}); "
                         "open and save it again") from err


def not_a_container(path: Path, head: bytes, label: str) -> str:
    """Why a file that should be a zip container is not one (one line)."""
    if head.startswith(PDF_MAGIC):
        return f"this is a PDF, not a {label}; rename it to .pdf"
    if head.startswith(OLE_MAGIC):
        if is_encrypted_ole(path):
            return f"password-protected {label}; remove the password and index it again"
        return (f"an old binary Office file (.doc/.xls/.ppt), not a {label}; "
                "save it in the current format (.docx/.xlsx/.pptx)")
    return f"not a {label} (no zip container inside); check the file or its extension"


def renamed_binary(path: Path, label: str) -> str | None:
    """Why a file of a text format is really a PDF, a zip or an Office binary (else None)."""
    with path.open("rb") as handle:
        head = handle.read(8)
    if head.startswith(PDF_MAGIC):
        return f"this is a PDF, not a {label}; rename it to .pdf"
    if head.startswith(ZIP_MAGIC) or head.startswith(OLE_MAGIC):
        return (f"a zip or Office binary, not a {label}; check the file or its extension "
                "(.docx, .xlsx, .pptx)")
    return None


def is_encrypted_ole(path: Path) -> bool:
    """True when an OLE2 file holds an ``EncryptionInfo`` stream (a locked Office file)."""
    tail = b""
    with path.open("rb") as handle:
        while block := handle.read(SCAN_BLOCK):
            if ENCRYPTION_STREAM in tail + block:
                return True
            tail = block[-len(ENCRYPTION_STREAM):]
    return False


def _check_sizes(members: list[zipfile.ZipInfo], label: str, max_unzipped: int) -> None:
    if len(members) > MAX_MEMBERS:
        raise Unreadable(f"{label} holds {len(members):,} entries, over the limit of "
                         f"{MAX_MEMBERS:,}; it is not a document")
    total = sum(m.file_size for m in members)
    if total > max_unzipped:
        raise Unreadable(f"{label} unpacks to {total / MB:,.0f} MB, over the "
                         f"{max_unzipped / MB:,.0f} MB limit (a zip bomb?); split it or "
                         "raise KRAG_MAX_UPLOAD_MB")


def _check_locked(archive: zipfile.ZipFile, names: set[str], label: str) -> None:
    locked = f"password-protected {label}; remove the password and index it again"
    if any(m.flag_bits & 0x1 for m in archive.infolist()):
        raise Unreadable(locked)
    if "META-INF/manifest.xml" in names and b"encryption-data" in archive.read(
            "META-INF/manifest.xml"):
        raise Unreadable(locked)
    if "META-INF/encryption.xml" in names:
        listed = archive.read("META-INF/encryption.xml").lower()
        if any(ext in listed for ext in (b".xhtml", b".html", b".htm")):
            raise Unreadable(f"DRM-protected {label} (its chapters are encrypted); "
                             "index a DRM-free copy")
