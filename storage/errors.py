"""Typed storage errors. Messages are one line, name what went wrong and what to do."""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every error raised by :mod:`storage`."""


class DatabaseUnavailableError(StorageError):
    """The database cannot be reached (URL shown with the password masked)."""


class ExtensionMissingError(StorageError):
    """A required extension (vector, pg_trgm) is not installed on the server."""


class EmbeddingDimensionMismatchError(StorageError):
    """The store holds vectors of another model/dimension than the one configured."""


class EmbeddedPostgresError(StorageError):
    """The embedded PostgreSQL cluster could not be started or reused safely."""


class NotFoundError(StorageError):
    """A document, source or entity that was asked for does not exist."""


class InvalidInputError(StorageError):
    """An argument given to the store is out of range or malformed."""
