"""E-mail (.eml, RFC 822/MIME) as Markdown with the standard library's ``email`` package.

Text: ``# <subject>``, then ``- From:``, ``- To:``, ``- Cc:`` and ``- Date:`` lines, the body
(the plain-text part, else the HTML part through
:func:`~graph_flows.indexing.documents.html_text.html_to_text`), and one ``- Attachment:``
line per attached file (attachments are named, not read: save them and index them as
files). Metadata: ``subject``, ``from``, ``to``, ``cc``, ``date`` (ISO 8601 when it parses)
and ``attachments``. Title: the subject.

A message saved as UTF-16 text is decoded first. Refused with one line: an encrypted
message (S/MIME or PGP), a message with no text body
(only attachments, or nothing at all).
"""

from __future__ import annotations

import codecs
import email
import logging
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.containers import Unreadable
from graph_flows.indexing.documents.html_text import html_to_text

ENCRYPTED_TYPES = frozenset({"multipart/encrypted", "application/pkcs7-mime",
                             "application/x-pkcs7-mime"})
ADDRESS_HEADERS = (("from", "From"), ("to", "To"), ("cc", "Cc"))
log = logging.getLogger(__name__)


def convert_eml(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of an e-mail file."""
    data = path.read_bytes()
    wide = _utf16(data[:64])
    if wide:  # a message saved as UTF-16 text: its headers are ASCII in two-byte units
        message = email.message_from_string(data.decode(wide, errors="replace"),
                                            policy=policy.default)
    else:
        message = email.message_from_bytes(data, policy=policy.default)
    if not isinstance(message, EmailMessage):  # pragma: no cover - policy.default gives one
        raise Unreadable("not an e-mail message")
    if message.get_content_type() in ENCRYPTED_TYPES:
        raise Unreadable("encrypted e-mail (S/MIME or PGP); decrypt it and index it again")
    attachments = [_attachment_name(part) for part in message.iter_attachments()]
    body = _body(message)
    if not body.strip():
        if attachments:
            raise Unreadable(f"e-mail with no text, only attachments ({', '.join(attachments)});"
                             " save the attachments and index them")
        raise Unreadable("e-mail with no text body; nothing to index")
    meta = _metadata(message, attachments)
    subject = meta.get("subject") or None

    def blocks() -> Iterator[str]:
        yield f"# {subject or '(no subject)'}\n\n"
        lines = [f"- {label}: {meta[key]}" for key, label in (*ADDRESS_HEADERS, ("date", "Date"))
                 if meta.get(key)]
        if lines:
            yield "\n".join(lines) + "\n\n"
        yield body.strip() + "\n\n"
        if attachments:
            yield "\n".join(f"- Attachment: {name}" for name in attachments) + "\n"

    return subject, blocks(), meta


def _utf16(head: bytes) -> str | None:
    """"utf-16", "utf-16-le" or "utf-16-be" for a message saved as UTF-16, else None."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if len(head) >= 8 and head[1::2].count(0) == len(head) // 2:
        return "utf-16-le"
    if len(head) >= 8 and head[0::2].count(0) == (len(head) + 1) // 2:
        return "utf-16-be"
    return None


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except (ValueError, IndexError, TypeError) as err:  # a malformed header: left out
        log.debug("unreadable %s header: %s", name, err)
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _metadata(message: EmailMessage, attachments: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"subject": _header(message, "subject")}
    for key, _ in ADDRESS_HEADERS:
        meta[key] = _header(message, key)
    meta["date"] = _date(message)
    meta["attachments"] = attachments
    return {k: v for k, v in meta.items() if v}


def _date(message: EmailMessage) -> str:
    try:
        value = message.get("date")
        when = getattr(value, "datetime", None)
    except (ValueError, IndexError, TypeError):
        return ""
    return when.isoformat() if when is not None else _header(message, "date")


def _body(message: EmailMessage) -> str:
    """The text of the plain-text body part, else of the HTML one ("" when neither)."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    text = _content(part)
    if part.get_content_subtype() == "html":
        return html_to_text(text)[1]
    return text


def _content(part: Any) -> str:
    """A text part decoded by its charset (undecodable bytes replaced)."""
    try:
        return str(part.get_content())
    except (LookupError, ValueError, AssertionError) as err:
        log.debug("falling back to a lenient decode: %s", err)
    payload = part.get_payload(decode=True) or b""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:
        return payload.decode("utf-8", errors="replace")


def _attachment_name(part: Any) -> str:
    return " ".join((part.get_filename() or part.get_content_type()).split())
