"""Precision and recall of "same entity" links between names by the cosine of their MiniLM
name vectors, on Re-DocRED's entity aliases: the data behind the ``ppr`` recipe's synonym
threshold (graph_flows.query.evidence.SYNONYM_MIN).

Usage::

    python -m bench.synonym_threshold \\
        --redocred ../shared/benchdata/relation_extraction/redocred_dev_200.jsonl

For every document: each entity's name and aliases are embedded as entity names are at
ingest (the name alone); pairs of two different spellings of one entity are positives, pairs
of spellings of two different entities of the same document negatives (hard ones: the same
topic, often the same kind). Prints, per cosine threshold, the share of positives at or above
it (recall) and the share of pairs at or above it that are positives (precision).
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

from graph_flows.shared.embeddings import MiniLMEmbeddings

THRESHOLDS = (0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def spellings(doc: dict) -> list[list[str]]:
    """Each entity's distinct spellings (name and aliases)."""
    return [sorted({n for n in [e["name"], *e.get("aliases", [])] if n})
            for e in doc["entities"]]


def pair_cosines(entities: list[list[str]], vectors: dict[str, np.ndarray],
                 ) -> tuple[list[float], list[float]]:
    """Cosines of same-entity pairs (spellings differing beyond case) and of cross-entity
    pairs."""
    pos = [float(vectors[a] @ vectors[b]) for names in entities
           for a, b in itertools.combinations(names, 2) if a.casefold() != b.casefold()]
    neg = [float(vectors[a] @ vectors[b]) for x, y in itertools.combinations(entities, 2)
           for a in x for b in y]
    return pos, neg


def main() -> None:
    """Parse arguments, embed, print the table (or JSON)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--redocred", type=Path, required=True)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    embedder = MiniLMEmbeddings()
    pos: list[float] = []
    neg: list[float] = []
    with args.redocred.open(encoding="utf-8") as f:
        for line in f:
            entities = spellings(json.loads(line))
            names = sorted({n for e in entities for n in e})
            if len(names) < 2:
                continue
            vectors = dict(zip(names, np.asarray(embedder.embed_documents(names)), strict=True))
            a, b = pair_cosines(entities, vectors)
            pos += a
            neg += b
    p_arr, n_arr = np.asarray(pos), np.asarray(neg)
    rows = []
    for t in THRESHOLDS:
        tp, fp = int((p_arr >= t).sum()), int((n_arr >= t).sum())
        rows.append({"threshold": t, "recall": round(tp / max(len(p_arr), 1), 3),
                     "precision": round(tp / max(tp + fp, 1), 3), "tp": tp, "fp": fp})
    if args.json:
        print(json.dumps({"positives": len(pos), "negatives": len(neg), "rows": rows}))
        return
    print(f"{len(pos)} same-entity pairs, {len(neg)} different-entity pairs")
    for r in rows:
        print(f"cosine >= {r['threshold']:.2f}: recall {r['recall']:.3f}  "
              f"precision {r['precision']:.3f}  ({r['tp']} / {r['tp'] + r['fp']})")


if __name__ == "__main__":
    main()
