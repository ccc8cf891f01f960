"""Extraction fixtures for the indexing tests: a catalogue of known entities and the
realistic LLM JSON naming them (:func:`catalogue_reply`). The scripted models themselves
live in :mod:`graph_flows.testing.fakes` (the indexing benchmark uses them too).
"""

from __future__ import annotations

import json

CATALOGUE = {
    "PostgreSQL": ("technology", "Open-source relational database."),
    "Michael Stonebraker": ("person", "Database researcher at UC Berkeley."),
    "UC Berkeley": ("organization", "University of California, Berkeley."),
    "Ingres": ("technology", "Relational database project at Berkeley."),
    "MVCC": ("concept", "Multiversion concurrency control."),
    "pgvector": ("technology", "PostgreSQL extension for vector search."),
    "Andrew Kane": ("person", "Developer who created pgvector."),
}
CATALOGUE_RELATIONS = [
    ("Michael Stonebraker", "relates_to", "PostgreSQL",
     "Michael Stonebraker created PostgreSQL.", "1986"),
    ("Michael Stonebraker", "part_of", "UC Berkeley",
     "Michael Stonebraker worked at UC Berkeley.", None),
    ("Michael Stonebraker", "relates_to", "Ingres", "Michael Stonebraker built Ingres.", "1973"),
    ("PostgreSQL", "uses", "MVCC", "PostgreSQL uses MVCC.", None),
    ("pgvector", "part_of", "PostgreSQL", "pgvector is an extension of PostgreSQL.", None),
    ("Andrew Kane", "relates_to", "pgvector", "Andrew Kane created pgvector.", "2021"),
]


def catalogue_reply(text: str) -> str:
    """Realistic extraction JSON: catalogue entities named in ``text`` and their relations."""
    names = [n for n in CATALOGUE if n in text]
    entities = [{"name": n, "type": CATALOGUE[n][0], "description": CATALOGUE[n][1],
                 "confidence": 0.9} for n in names]
    relations = [{"subject": s, "predicate": p, "object": o, "fact": f, "confidence": 0.85,
                  "valid_at": v} for s, p, o, f, v in CATALOGUE_RELATIONS
                 if s in names and o in names]
    return json.dumps({"entities": entities, "relations": relations})
