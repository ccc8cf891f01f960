"""bench.synonym_threshold: which name pairs count as same-entity and cross-entity."""

from __future__ import annotations

import numpy as np

from bench.synonym_threshold import pair_cosines, spellings


def test_pairs_are_split_by_entity_and_case_variants_are_not_positives() -> None:
    doc = {"entities": [{"name": "Velmor Prize", "aliases": ["the Velmor", "velmor prize"]},
                        {"name": "Orsina Kael", "aliases": []}]}
    entities = spellings(doc)
    assert entities == [["Velmor Prize", "the Velmor", "velmor prize"], ["Orsina Kael"]]
    unit = {n: np.eye(4)[i] for i, n in enumerate(
        ["Velmor Prize", "the Velmor", "velmor prize", "Orsina Kael"])}
    unit["the Velmor"] = unit["Velmor Prize"]  # the same vector: cosine 1
    pos, neg = pair_cosines(entities, unit)
    assert sorted(pos) == [0.0, 1.0]  # Prize/the Velmor, the Velmor/velmor prize
    assert neg == [0.0, 0.0, 0.0]  # each Velmor spelling against Kael
