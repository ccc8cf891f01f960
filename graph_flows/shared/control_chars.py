"""Control characters in what a person or a program types: refused, never searched or stored.

PostgreSQL text cannot hold NUL (psycopg raises ``DataError`` deep inside a search), and the
other C0 controls (all but tab, newline and carriage return), DEL and the C1 controls
(U+0080-U+009F) are never meant in a query, an entity hint, a scope, a date, a source name,
a path, a file name or a fact: they come from a bad paste, a binary file name or a hostile
caller. Every surface refuses them with the one line of :func:`control_message` (what, which
character, where, what to do).

Document text is not refused: the cleaning step removes these characters
(:func:`graph_flows.indexing.documents.clean.clean_text`) as it removes other extraction
noise, and a file with NUL bytes is skipped as binary by its loader.
"""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""The characters refused: C0 but tab, newline and carriage return; DEL; C1."""


def control_message(what: str, value: str) -> str | None:
    """One line saying ``what`` holds a control character (which one, at which character),
    or None when ``value`` has none."""
    found = CONTROL.search(value)
    if found is None:
        return None
    return (f"{what} contains a control character (U+{ord(found.group()):04X} at character "
            f"{found.start() + 1}); remove it and try again.")
