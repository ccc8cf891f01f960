"""The peer-comparison exporter stays runnable (no LightRAG, no database, no model needed)."""

from __future__ import annotations

import json

import numpy as np

from bench import export_synthetic as ex
from bench import synthetic
from bench.retrieval_latency import analysis_terms


def test_export_round_trip(tmp_path) -> None:
    graph = synthetic.generate_graph(200, 600, seed=3)
    queries = synthetic.generate_queries(graph, 24)
    doc, arrays = ex.export(graph, queries, ex._HashDocs(), text_vectors=True)
    jpath, npath = ex.write(tmp_path / "g", doc, arrays)
    back = json.loads(jpath.read_text())
    vec = np.load(npath)
    assert back["format"] == ex.FORMAT and back["dim"] == synthetic.DIM
    assert len(back["entities"]) == 200 and len(back["relations"]) == 600
    assert len(back["chunks"]) == 1000 and len({c["id"] for c in back["chunks"]}) == 1000
    chunk_ids = {c["id"] for c in back["chunks"]}
    assert all(1 <= len(e["chunks"]) <= 2 and set(e["chunks"]) <= chunk_ids
               for e in back["entities"])
    assert all(r["chunk"] in chunk_ids for r in back["relations"])
    assert vec["entity"].shape == (200, synthetic.DIM)
    assert vec["relation"].shape == (600, synthetic.DIM)
    assert vec["query"].shape == (24, synthetic.DIM)
    assert vec["entity_text"].shape == (200, synthetic.DIM)
    assert np.allclose(np.linalg.norm(vec["entity"], axis=1), 1, atol=1e-4)
    # the stored vectors are exactly what load_graph writes
    centres = synthetic.cluster_centres(graph)
    assert np.array_equal(vec["entity"][:50], synthetic.entity_vectors(graph, 0, 50, centres))
    for q, row in zip(queries, back["queries"], strict=True):
        assert row["text"] == q.text and row["targets"] == list(q.targets)
        assert (row["terms"], row["predicates"]) == tuple(map(list, analysis_terms(q.text)))
    # seeded: the same export twice
    again, _ = ex.export(graph, queries, ex._HashDocs())
    assert again["entities"] == doc["entities"] and again["chunks"] == doc["chunks"]


def test_cli_writes_both_files(tmp_path) -> None:
    assert ex.main(["--entities", "100", "--relations", "300", "--queries", "12",
                    "--out", str(tmp_path / "x"), "--hash-embedder"]) == 0
    assert (tmp_path / "x.json").exists() and (tmp_path / "x.npz").exists()
