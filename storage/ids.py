"""Deterministic identifiers: the same input always yields the same id."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACES = re.compile(r"\s+")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(text: str) -> str:
    """sha256 hex digest of a text."""
    return _sha(text)


def normalize_name(name: str) -> str:
    """Casefolded, NFKC, single-spaced name used for matching and ids."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", name)).strip().casefold()


def entity_id(name: str, entity_type: str, scope: str) -> str:
    """``ent_`` + sha256 of ``lower(name):type:scope``."""
    return "ent_" + _sha(f"{normalize_name(name)}:{entity_type}:{scope}")


GENERIC_PREDICATE = "relates_to"


def predicate_key(predicate: str, predicate_text: str | None) -> str | None:
    """What a stated predicate adds to a fact's identity: for the generic type only, the text
    casefolded and single-spaced (``relates_to`` says nothing of how two entities relate, the
    words do: "acquired" and "was founded by" are two facts); None for the specific types
    (their wordings are synonyms: "utilizes" and "employs" are one ``uses`` fact), without a
    text, or when the text only repeats the type."""
    if predicate != GENERIC_PREDICATE or not predicate_text:
        return None
    key = normalize_name(predicate_text.replace("_", " "))
    return key if key and key != normalize_name(predicate.replace("_", " ")) else None


def relation_id(
    subject_id: str, predicate: str, object_id: str, predicate_text: str | None = None
) -> str:
    """``rel_`` + sha256 of ``subject_id:predicate:object_id`` (ids already carry the scope),
    with ``:`` + :func:`predicate_key` appended when there is one: "X acquired Y" and "X was
    founded by Y" (both ``relates_to``) stay two facts, while a fact of a specific type or
    without a text keeps the id it had before predicate texts were stored."""
    key = predicate_key(predicate, predicate_text)
    base = f"{subject_id}:{predicate}:{object_id}"
    return "rel_" + _sha(base if key is None else f"{base}:{key}")


def document_id(scope: str, source: str, uri: str) -> str:
    """``doc_`` + sha256 of ``scope:source:uri``: one row per file path within a source."""
    return "doc_" + _sha(f"{scope}:{source}:{uri}")


def chunk_id(document_id_: str, text_hash: str, occurrence: int = 0) -> str:
    """``chk_`` + sha256 of document, chunk text hash and occurrence of that text in the doc.

    Unchanged chunks of an edited document keep their id (so they are not re-extracted).
    """
    return "chk_" + _sha(f"{document_id_}:{text_hash}:{occurrence}")
