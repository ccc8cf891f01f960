"""The peer-comparison exporter stays runnable (no LightRAG, no database, no model needed)."""

from __future__ import annotations

import json

import numpy as np
from sqlalchemy import text

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
    layout = synthetic.chunk_layout(graph)
    assert [c["id"] for c in back["chunks"]] == layout.chunk_ids  # what load_graph writes
    assert len({c["id"] for c in back["chunks"]}) == len(layout.chunk_ids) == 200 // 3
    chunk_ids = {c["id"] for c in back["chunks"]}
    assert all(e["chunks"] and set(e["chunks"]) <= chunk_ids for e in back["entities"])
    text = {c["id"]: c["content"] for c in back["chunks"]}
    assert all(r["fact"] in text[r["chunk"]] for r in back["relations"])
    assert vec["chunk"].shape == (len(layout.chunk_ids), synthetic.DIM)
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


def test_export_is_what_load_graph_stored(store) -> None:
    """The peer gets the very graph our database holds: chunk texts, provenance, vectors."""
    graph = synthetic.generate_graph(300, 900, seed=5)
    synthetic.load_graph(store, graph, batch_size=100)
    doc, arrays = ex.export(graph, synthetic.generate_queries(graph, 8), ex._HashDocs(),
                            batch_size=100)
    with store.connect() as conn:
        chunks = {r.id: (r.text, np.asarray(json.loads(r.v), dtype=np.float32))
                  for r in conn.execute(text("SELECT id, text, embedding::text AS v FROM chunks"))}
        ent_prov = {r.name: set(r.chunks) for r in conn.execute(text(
            "SELECT e.name, array_agg(p.chunk_id) AS chunks FROM entities e "
            "JOIN entity_provenance p ON p.entity_id = e.id GROUP BY e.name"))}
        rel_chunk = {r.fact: r.chunk_id for r in conn.execute(text(
            "SELECT r.fact, p.chunk_id FROM relations r "
            "JOIN relation_provenance p ON p.relation_id = r.id"))}
        ent_vec = {r.name: np.asarray(json.loads(r.v), dtype=np.float32) for r in conn.execute(
            text("SELECT name, embedding::text AS v FROM entities"))}
    assert {c["id"]: c["content"] for c in doc["chunks"]} == {k: v[0] for k, v in chunks.items()}
    for i, c in enumerate(doc["chunks"]):
        assert np.allclose(arrays["chunk"][i], chunks[c["id"]][1], atol=1e-5)
    for i, e in enumerate(doc["entities"]):
        assert set(e["chunks"]) == ent_prov[e["name"]]
        assert np.allclose(arrays["entity"][i], ent_vec[e["name"]], atol=1e-5)
    assert all(rel_chunk[r["fact"]] == r["chunk"] for r in doc["relations"]
               if sum(x["fact"] == r["fact"] for x in doc["relations"]) == 1)
