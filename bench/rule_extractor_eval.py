"""Score the rule-based extractor against Re-DocRED (document-level relation extraction).

Usage::

    python -m bench.rule_extractor_eval PATH [--chunk-size N] [--limit N] [--json]

PATH is a Re-DocRED JSON file (e.g. ``test_revised.json``): a list of documents with
``sents`` (lists of tokens), ``vertexSet`` (one list of mentions, ``{name, type, ...}``, per
gold entity) and ``labels`` (``{h, t, r}`` with ``h``/``t`` indexes into ``vertexSet`` and
``r`` a Wikidata property id). The dataset is not shipped; get it from
https://github.com/tonytan48/Re-DocRED.

What is measured, per document then summed over all documents (micro-average):

* Text: tokens joined with spaces, then spaces before punctuation and inside brackets
  removed. It is cut with :func:`chunk_text` (``--chunk-size``, default 1000, as the
  indexing pipeline does; 0 = whole document) and the extractions of the chunks are merged.
* Entities, after :func:`validate_extraction` at ``min_confidence`` 0.6 (what the pipeline
  keeps). A predicted entity matches a gold entity when its name equals, case-insensitively
  and whitespace-normalised, any mention name of that gold entity. Precision = distinct
  predicted names that match / distinct predicted names; recall = gold entities matched /
  gold entities. Reported for all gold entities and for named ones only (gold types PER,
  ORG, LOC, MISC; TIME and NUM are not what the extractor looks for; predictions matching a
  TIME/NUM entity are then left out of the precision too). Type accuracy: among
  matched PER/ORG/LOC gold entities, the share whose predicted type is person/organization/
  location respectively.
* Relations, untyped: a predicted relation counts as the unordered pair of gold entities its
  endpoints match (a relation with an unmatched endpoint is a distinct wrong pair). Gold
  pairs are the unordered (h, t) pairs of ``labels``. Measured twice: verb-pattern relations
  only (``min_confidence`` 0.6, the default) and with co-occurrence links (0.3).
* Relations, typed, only where Wikidata properties map onto krag types
  (:data:`TYPED_PROPERTIES`: part of / member of -> part_of, has part / contains -> contains,
  uses / programmed in / platform -> uses): ordered (subject, type, object) must equal
  (h, mapped r, t). Precision is over predicted relations of those types, recall over gold
  labels with a mapped property.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.chunking import chunk_text
from graph_flows.indexing.extraction.rules import extract_rules
from graph_flows.indexing.extraction.schema import ExtractedRelation, Extraction
from graph_flows.indexing.extraction.validation import name_key, validate_extraction

TYPED_PROPERTIES = {
    "P361": "part_of", "P463": "part_of", "P527": "contains", "P150": "contains",
    "P2283": "uses", "P277": "uses", "P400": "uses",
}
GOLD_TYPES = {"PER": "person", "ORG": "organization", "LOC": "location"}
NAMED_TYPES = frozenset({"PER", "ORG", "LOC", "MISC"})
PIPELINE_MIN_CONFIDENCE = 0.6
COOCCURRENCE_MIN_CONFIDENCE = 0.3


class BenchError(Exception):
    """A problem with the input file; ``str()`` is one line for the user."""


@dataclass
class Score:
    """True positives, predicted and gold counts, with derived precision/recall/F1."""

    tp: int = 0
    predicted: int = 0
    gold: int = 0

    def add(self, tp: int, predicted: int, gold: int) -> None:
        """Accumulate one document's counts."""
        self.tp, self.predicted, self.gold = self.tp + tp, self.predicted + predicted, \
            self.gold + gold

    def as_dict(self) -> dict[str, float | int]:
        """Counts plus precision, recall and F1 (0 when undefined)."""
        p = self.tp / self.predicted if self.predicted else 0.0
        r = self.tp / self.gold if self.gold else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        return {"tp": self.tp, "predicted": self.predicted, "gold": self.gold,
                "precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4)}


@dataclass
class Report:
    """All scores of a run."""

    documents: int = 0
    entities: Score = field(default_factory=Score)
    named_entities: Score = field(default_factory=Score)
    type_accuracy: Score = field(default_factory=Score)
    relations: Score = field(default_factory=Score)
    relations_with_cooccurrence: Score = field(default_factory=Score)
    typed_relations: Score = field(default_factory=Score)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view."""
        out: dict[str, Any] = {"documents": self.documents}
        for name, value in vars(self).items():
            if isinstance(value, Score):
                out[name] = value.as_dict()
        return out


def load_docs(path: Path) -> list[dict[str, Any]]:
    """The documents of a Re-DocRED file; BenchError with a one-line message otherwise."""
    if not path.is_file():
        raise BenchError(f"Re-DocRED file not found: {path} (download it from "
                         "https://github.com/tonytan48/Re-DocRED and pass its path)")
    try:
        docs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BenchError(f"cannot read {path} as JSON: {err}") from err
    if not isinstance(docs, list) or not all(
        isinstance(d, dict) and {"sents", "vertexSet"} <= d.keys() for d in docs
    ):
        raise BenchError(f"{path} is not Re-DocRED: expected a list of documents with "
                         "'sents' and 'vertexSet'")
    return docs


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens joined into readable text ("Babbage 's" -> "Babbage's", "( 1815 )" -> "(1815)")."""
    text = " ".join(tokens)
    text = re.sub(r" ([.,;:!?%)\]}])", r"\1", text)
    text = re.sub(r"([(\[{$]) ", r"\1", text)
    text = re.sub(r" (['’]s|n't|['’]re|['’]ve|['’]ll|['’]d|['’]m)\b", r"\1", text)
    return re.sub(r"`` | ''", '"', text)


def doc_text(doc: dict[str, Any]) -> str:
    """The whole text of a document."""
    return " ".join(detokenize(sentence) for sentence in doc["sents"])


@dataclass
class Predicted:
    """Validated output for one document: entity name keys -> types, and relations."""

    entities: dict[str, str]
    relations: list[ExtractedRelation]


def predict(text: str, chunk_size: int, min_confidence: float,
            extract: Callable[[str], Extraction] = extract_rules) -> Predicted:
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


def gold_index(doc: dict[str, Any]) -> dict[str, int]:
    """Name key of every gold mention -> index of its entity in ``vertexSet``."""
    index: dict[str, int] = {}
    for i, mentions in enumerate(doc["vertexSet"]):
        for mention in mentions:
            index.setdefault(name_key(mention["name"]), i)
    return index


def score_entities(doc: dict[str, Any], predicted: Predicted, report: Report) -> None:
    """Entity precision/recall (all and named) and type accuracy for one document."""
    index = gold_index(doc)
    matched = {index[key] for key in predicted.entities if key in index}
    tp_names = sum(1 for key in predicted.entities if key in index)
    report.entities.add(tp_names, len(predicted.entities), len(doc["vertexSet"]))
    named = {i for i, m in enumerate(doc["vertexSet"]) if m and m[0].get("type") in NAMED_TYPES}
    named_names = sum(1 for key in predicted.entities if index.get(key) in named)
    wrong_kind = sum(1 for key in predicted.entities if key in index and index[key] not in named)
    report.named_entities.add(named_names, len(predicted.entities) - wrong_kind, len(named))
    for i in matched:
        gold_type = GOLD_TYPES.get(doc["vertexSet"][i][0].get("type", ""))
        if gold_type is None:
            continue
        types = {t for key, t in predicted.entities.items() if index.get(key) == i}
        report.type_accuracy.add(int(gold_type in types), 1, 1)


def score_pairs(doc: dict[str, Any], relations: list[ExtractedRelation], score: Score) -> None:
    """Untyped relation precision/recall: unordered gold entity pairs."""
    index = gold_index(doc)
    gold = {frozenset((lab["h"], lab["t"])) for lab in doc.get("labels", [])
            if lab["h"] != lab["t"]}
    predicted: set[frozenset[Any]] = set()
    for rel in relations:
        s, o = index.get(name_key(rel.subject)), index.get(name_key(rel.object))
        if s is None or o is None or s == o:
            predicted.add(frozenset((("?", name_key(rel.subject)), ("?", name_key(rel.object)))))
        else:
            predicted.add(frozenset((s, o)))
    score.add(len(predicted & gold), len(predicted), len(gold))


def score_typed(doc: dict[str, Any], relations: list[ExtractedRelation], score: Score) -> None:
    """Typed relation precision/recall over the properties of TYPED_PROPERTIES."""
    index = gold_index(doc)
    mapped = set(TYPED_PROPERTIES.values())
    gold = {(lab["h"], TYPED_PROPERTIES[lab["r"]], lab["t"]) for lab in doc.get("labels", [])
            if lab["r"] in TYPED_PROPERTIES}
    predicted = {
        (index.get(name_key(rel.subject), name_key(rel.subject)), rel.predicate,
         index.get(name_key(rel.object), name_key(rel.object)))
        for rel in relations if rel.predicate in mapped
    }
    score.add(len(predicted & gold), len(predicted), len(gold))


def evaluate(docs: list[dict[str, Any]], *, chunk_size: int = 1000,
             extract: Callable[[str], Extraction] = extract_rules) -> Report:
    """Score ``extract`` on every document (see the module docstring for the measures)."""
    report = Report()
    for doc in docs:
        text = doc_text(doc)
        strict = predict(text, chunk_size, PIPELINE_MIN_CONFIDENCE, extract)
        loose = predict(text, chunk_size, COOCCURRENCE_MIN_CONFIDENCE, extract)
        report.documents += 1
        score_entities(doc, strict, report)
        score_pairs(doc, strict.relations, report.relations)
        score_pairs(doc, loose.relations, report.relations_with_cooccurrence)
        score_typed(doc, strict.relations, report.typed_relations)
    return report


def format_report(report: Report) -> str:
    """A plain-text table of the report."""
    rows = [f"documents: {report.documents}",
            f"{'measure':<28} {'P':>7} {'R':>7} {'F1':>7} {'tp':>7} {'pred':>7} {'gold':>7}"]
    for name, values in report.as_dict().items():
        if isinstance(values, dict):
            rows.append(f"{name:<28} {values['precision']:>7.3f} {values['recall']:>7.3f} "
                        f"{values['f1']:>7.3f} {values['tp']:>7} {values['predicted']:>7} "
                        f"{values['gold']:>7}")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m bench.rule_extractor_eval",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="Re-DocRED JSON file")
    parser.add_argument("--chunk-size", type=int, default=1000,
                        help="chunk size used before extraction (0: whole document)")
    parser.add_argument("--limit", type=int, default=0, help="score only the first N documents")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        docs = load_docs(args.path)
        if args.limit:
            docs = docs[: args.limit]
        report = evaluate(docs, chunk_size=args.chunk_size)
    except (BenchError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report.as_dict(), indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
