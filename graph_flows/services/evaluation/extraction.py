"""`krag eval extraction`: score the no-LLM extractor against Re-DocRED documents.

The extractor runs as the pipeline runs it: the text is cut with ``chunk_text`` (chunk size
1000 by default, 0 = whole document), each chunk is extracted and validated at the
pipeline's ``min_confidence``, and the chunks' results are merged. Per document, summed over
documents (micro-average):

* Entities: a predicted name matches a gold entity when it equals, after case and
  whitespace folding, the gold name, an alias or a mention. P = distinct predicted names
  that match / distinct predicted names; R = gold entities matched / gold entities.
  ``named_entities``: only gold types PER, ORG, LOC, MISC (predictions matching a TIME/NUM
  entity are left out of the precision too).
* Type accuracy: among matched PER/ORG/LOC gold entities, the share predicted as
  person/organization/location respectively.
* Relations untyped (``pairs``): the unordered pair of gold entities a relation's endpoints
  match (an unmatched endpoint makes a distinct wrong pair) against the gold pairs.
  ``pairs_with_cooccurrence`` does the same with co-occurrence links kept (confidence 0.3).
* Relations typed: where our type stands for Wikidata properties (:data:`TYPED_PROPERTIES`),
  the ordered (subject, type, object) must equal (head, mapped property, tail); P over our
  relations of those types, R over gold relations with a mapped property.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.documents.chunking import chunk_text
from graph_flows.indexing.extraction.rules import extract_rules
from graph_flows.indexing.extraction.schema import ExtractedRelation, Extraction
from graph_flows.indexing.extraction.validation import name_key, validate_extraction
from graph_flows.services.evaluation.data import GoldDocument
from graph_flows.services.evaluation.metrics import prf

TYPED_PROPERTIES = {
    "P361": "part_of", "P463": "part_of", "P527": "contains", "P150": "contains",
    "P2283": "uses", "P277": "uses", "P400": "uses",
}
GOLD_TYPES = {"PER": "person", "ORG": "organization", "LOC": "location"}
NAMED_TYPES = frozenset({"PER", "ORG", "LOC", "MISC"})
COOCCURRENCE_MIN_CONFIDENCE = 0.3

Extractor = Callable[[str], Extraction]
Progress = Callable[[int, int], None]


@dataclass
class Count:
    """True positives, predicted and gold counts."""

    tp: int = 0
    predicted: int = 0
    gold: int = 0

    def add(self, tp: int, predicted: int, gold: int) -> None:
        """Accumulate one document's counts."""
        self.tp += tp
        self.predicted += predicted
        self.gold += gold

    def as_dict(self) -> dict[str, float | int]:
        """P, R, F1 and the counts."""
        return {**prf(self.tp, self.predicted, self.gold), "tp": self.tp,
                "predicted": self.predicted, "gold": self.gold}


@dataclass
class ExtractionReport:
    """All counts of a run."""

    documents: int = 0
    entities: Count = field(default_factory=Count)
    named_entities: Count = field(default_factory=Count)
    types: Count = field(default_factory=Count)
    pairs: Count = field(default_factory=Count)
    pairs_with_cooccurrence: Count = field(default_factory=Count)
    typed: Count = field(default_factory=Count)

    def as_dict(self) -> dict[str, Any]:
        """``{"entities", "named_entities", "type_accuracy", "pairs", "typed", ...}``."""
        types = self.types
        return {"documents": self.documents, "entities": self.entities.as_dict(),
                "named_entities": self.named_entities.as_dict(),
                "type_accuracy": round(types.tp / types.gold, 4) if types.gold else 0.0,
                "type_counts": {"correct": types.tp, "matched": types.gold},
                "pairs": self.pairs.as_dict(),
                "pairs_with_cooccurrence": self.pairs_with_cooccurrence.as_dict(),
                "typed": self.typed.as_dict()}


@dataclass
class Predicted:
    """Validated output for one document: entity name keys -> types, and relations."""

    entities: dict[str, str]
    relations: list[ExtractedRelation]


def predict(text: str, chunk_size: int, min_confidence: float,
            extract: Extractor = extract_rules) -> Predicted:
    """Extract and validate each chunk (as the pipeline does) and merge the results."""
    pieces = chunk_text(text, size=chunk_size, overlap=0) if chunk_size else [text]
    entities: dict[str, str] = {}
    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    for piece in pieces:
        result = validate_extraction(extract(piece), min_confidence=min_confidence)
        for entity in result.entities:
            entities.setdefault(name_key(entity.name), entity.type)
        for rel in result.relations:
            relations.setdefault((name_key(rel.subject), rel.predicate, name_key(rel.object)), rel)
    return Predicted(entities, list(relations.values()))


def gold_index(doc: GoldDocument) -> dict[str, int]:
    """Name key of every gold name -> index of its entity."""
    index: dict[str, int] = {}
    for i, entity in enumerate(doc.entities):
        for name in entity.names:
            index.setdefault(name_key(name), i)
    return index


def score_entities(doc: GoldDocument, predicted: Predicted, report: ExtractionReport) -> None:
    """Entity P/R (all and named) and type accuracy for one document."""
    index = gold_index(doc)
    report.entities.add(sum(1 for key in predicted.entities if key in index),
                        len(predicted.entities), len(doc.entities))
    named = {i for i, e in enumerate(doc.entities) if e.type in NAMED_TYPES}
    named_tp = sum(1 for key in predicted.entities if index.get(key) in named)
    wrong_kind = sum(1 for key in predicted.entities if key in index and index[key] not in named)
    report.named_entities.add(named_tp, len(predicted.entities) - wrong_kind, len(named))
    for i in {index[key] for key in predicted.entities if key in index}:
        gold_type = GOLD_TYPES.get(doc.entities[i].type)
        if gold_type is None:
            continue
        types = {t for key, t in predicted.entities.items() if index.get(key) == i}
        report.types.add(int(gold_type in types), 1, 1)


def score_pairs(doc: GoldDocument, relations: Sequence[ExtractedRelation], count: Count) -> None:
    """Untyped relation P/R: unordered gold entity pairs."""
    index = gold_index(doc)
    gold = {frozenset((h, t)) for h, t, _ in doc.relations if h != t}
    predicted: set[frozenset[Any]] = set()
    for rel in relations:
        s, o = index.get(name_key(rel.subject)), index.get(name_key(rel.object))
        if s is None or o is None or s == o:
            predicted.add(frozenset((("?", name_key(rel.subject)), ("?", name_key(rel.object)))))
        else:
            predicted.add(frozenset((s, o)))
    count.add(len(predicted & gold), len(predicted), len(gold))


def score_typed(doc: GoldDocument, relations: Sequence[ExtractedRelation], count: Count) -> None:
    """Typed relation P/R over the properties of TYPED_PROPERTIES."""
    index = gold_index(doc)
    mapped = set(TYPED_PROPERTIES.values())
    gold = {(h, TYPED_PROPERTIES[r], t) for h, t, r in doc.relations if r in TYPED_PROPERTIES}
    predicted = {
        (index.get(name_key(rel.subject), name_key(rel.subject)), rel.predicate,
         index.get(name_key(rel.object), name_key(rel.object)))
        for rel in relations if rel.predicate in mapped
    }
    count.add(len(predicted & gold), len(predicted), len(gold))


def evaluate(docs: Sequence[GoldDocument], *, chunk_size: int = 1000,
             extract: Extractor = extract_rules, min_confidence: float | None = None,
             on_progress: Progress | None = None) -> ExtractionReport:
    """Score ``extract`` on every document (see the module docstring for the measures)."""
    strict_at = IndexingContext().min_confidence if min_confidence is None else min_confidence
    report = ExtractionReport()
    for n, doc in enumerate(docs, 1):
        strict = predict(doc.text, chunk_size, strict_at, extract)
        loose = predict(doc.text, chunk_size, COOCCURRENCE_MIN_CONFIDENCE, extract)
        report.documents += 1
        score_entities(doc, strict, report)
        score_pairs(doc, strict.relations, report.pairs)
        score_pairs(doc, loose.relations, report.pairs_with_cooccurrence)
        score_typed(doc, strict.relations, report.typed)
        if on_progress:
            on_progress(n, len(docs))
    return report
