"""The alias measure of `krag eval extraction`: one entity per real-world thing?

The Re-DocRED documents are ingested through the indexing graph as the product runs it (the
rule extractor, validation, the real resolution step, the writes) into their own scope of
the store (``eval-aliases-`` + a hash of the documents, emptied first so every run resolves
anew), and the stored entities of each document are compared with its gold entities:

* ``multi_name``: gold PER/ORG/LOC/MISC entities written with two or more distinct names in
  the document (names compared casefolded, whitespace removed: "People 's" = "People's");
* a stored entity's *names* are its name and its aliases; a gold entity's *matched names*
  are its names equal (:func:`~graph_flows.indexing.extraction.validation.name_key`) to a
  name of a stored entity of the document;
* ``merged``: multi-name entities with a matched name whose matched names all land in one
  stored entity; ``rate`` = merged / multi_name. ``observable`` / ``observable_merged``: the
  same among the multi-name entities of which two or more distinct names were matched (the
  ones resolution could have split or merged);
* ``false_merges``: stored entities whose names match two different gold entities;
  ``matched_entities`` (s): stored entities whose names match any gold entity;
  ``false_merge_rate`` = false_merges / s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any

from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.extraction.validation import name_key
from graph_flows.services.evaluation.data import GoldDocument
from graph_flows.services.evaluation.extraction import NAMED_TYPES, gold_index
from graph_flows.services.ingest import ingest
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.scoped import scope_access
from storage.errors import NotFoundError
from storage.resolution import DocumentEntity, source_entities

SOURCE = "redocred"
Progress = Callable[[int, int], None]


@dataclass
class AliasCount:
    """The counts of the alias measure (module docstring)."""

    multi_name: int = 0
    merged: int = 0
    observable: int = 0
    observable_merged: int = 0
    false_merges: int = 0
    matched_entities: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The counts and their rates."""
        def rate(a: int, b: int) -> float:
            return round(a / b, 4) if b else 0.0
        return {"multi_name": self.multi_name, "merged": self.merged,
                "rate": rate(self.merged, self.multi_name),
                "observable": self.observable, "observable_merged": self.observable_merged,
                "observable_rate": rate(self.observable_merged, self.observable),
                "false_merges": self.false_merges, "matched_entities": self.matched_entities,
                "false_merge_rate": rate(self.false_merges, self.matched_entities)}


def written_names(names: Sequence[str]) -> set[str]:
    """Distinct spellings of a gold entity's names (casefolded, whitespace removed)."""
    return {"".join(name_key(n).split()) for n in names}


def score_document(doc: GoldDocument, stored: Sequence[DocumentEntity],
                   count: AliasCount) -> None:
    """Add one document's counts."""
    index = gold_index(doc)
    owners: dict[int, set[str]] = {}   # gold entity -> stored entities holding its names
    matched: dict[int, set[str]] = {}  # gold entity -> its distinct names matched
    for ent in stored:
        golds = set()
        for name in (ent.name, *ent.aliases):
            i = index.get(name_key(name))
            if i is None:
                continue
            golds.add(i)
            owners.setdefault(i, set()).add(ent.id)
            matched.setdefault(i, set()).update(written_names([name]))
        count.matched_entities += bool(golds)
        count.false_merges += len(golds) >= 2
    for i, gold in enumerate(doc.entities):
        if gold.type not in NAMED_TYPES or len(written_names(gold.names)) < 2:
            continue
        count.multi_name += 1
        one = len(owners.get(i, ())) == 1
        count.merged += one
        if len(matched.get(i, ())) >= 2:
            count.observable += 1
            count.observable_merged += one


def document_uri(number: int) -> str:
    """The uri a Re-DocRED document is ingested under (its index in the file read)."""
    return f"redocred-{number:04d}"


def eval_scope(docs: Sequence[GoldDocument], short_forms: bool = True) -> str:
    """The scope the documents are ingested into (a hash of their texts; ``-nosf``: with
    the short forms not joined, the baseline)."""
    digest = hashlib.sha256("\0".join(d.text for d in docs).encode())
    return f"eval-aliases-{digest.hexdigest()[:12]}" + ("" if short_forms else "-nosf")


def measure_aliases(resources: Resources, docs: Sequence[GoldDocument], *, first: int = 0,
                    chunk_size: int = 1000, on_progress: Progress | None = None,
                    short_forms: bool = True) -> dict[str, Any]:
    """Ingest ``docs`` (numbered from ``first``) with the rule extractor and score the stored
    entities; ``{"aliases": {...}, "scope": ...}``. ``short_forms``: the documents' short
    forms joined to their full names (``IndexingContext.short_forms``), as the product
    ingests; off: the baseline without them."""
    scope = eval_scope(docs, short_forms)
    res = replace(resources, chat_override=NO_LLM)
    records = [{"uri": document_uri(first + n), "text": d.text} for n, d in enumerate(docs)]
    context = IndexingContext(chunk_size=chunk_size or IndexingContext().chunk_size,
                              short_forms=short_forms)
    with use_resources(res), scope_access(scope, res.store):
        with suppress(NotFoundError):  # a first run: nothing to empty
            res.store.remove_source(scope, SOURCE)
        ingest({"records": records, "scope": scope, "source": SOURCE}, context,
               on_progress=lambda s: on_progress and on_progress(
                   s["completed"] + s["failed"], s["total"]))
        with res.store.connect() as conn:
            stored = source_entities(conn, scope, SOURCE)
    count = AliasCount()
    for n, doc in enumerate(docs):
        score_document(doc, stored.get(document_uri(first + n), []), count)
    return {"aliases": count.as_dict(), "scope": scope}
