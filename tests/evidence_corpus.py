"""A tiny invented corpus for passage retrieval: a 2-hop question whose second passage
shares no words with the question and is reachable only through an entity it names.

Q: "Where did the founder of the Velmor Prize spend her childhood?"
P1 names the founder (Orsina Kael); P2 says where Kael grew up (Trelvik) without any word of
the question; the distractors talk about prizes, founders and childhoods of other people.
"""

from __future__ import annotations

from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import DocumentIn, EntityIn, KnowledgeStore, RelationIn, ids

QUESTION = "Where did the founder of the Velmor Prize spend her childhood?"
ANSWER = "Trelvik"
P1, P2 = "velmor.md", "kael.md"
# uri -> (text, entities [(name, type)], facts [(subject, predicate, object, sentence)])
DOCS: dict[str, tuple[str, list[tuple[str, str]], list[tuple[str, str, str, str]]]] = {
    P1: ("The Velmor Prize for poetry was founded by Orsina Kael in 1931.",
         [("Velmor Prize", "concept"), ("Orsina Kael", "person")],
         [("Orsina Kael", "relates_to", "Velmor Prize",
           "Orsina Kael founded the Velmor Prize.")]),
    P2: ("Kael grew up near the docks of Trelvik, where her father repaired fishing boats.",
         [("Orsina Kael", "person"), ("Trelvik", "location")],
         [("Orsina Kael", "relates_to", "Trelvik", "Orsina Kael grew up in Trelvik.")]),
    "vire.md": ("Tomas Vire spent his childhood winning prizes at the county fair.",
                [("Tomas Vire", "person"), ("County Fair", "concept")],
                [("Tomas Vire", "relates_to", "County Fair",
                  "Tomas Vire won prizes at the County Fair.")]),
    "lunde.md": ("Founders of poetry prizes often spend their childhood reading verse.",
                 [("Poetry Prize", "concept")], []),
    "ostrand.md": ("The Ostrand Medal honours painters; its founder Piet Lunde lived in "
                   "Bergholm.",
                   [("Ostrand Medal", "concept"), ("Piet Lunde", "person"),
                    ("Bergholm", "location")],
                   [("Piet Lunde", "relates_to", "Ostrand Medal",
                     "Piet Lunde founded the Ostrand Medal.")]),
    "harbour.md": ("Fishing boats leave the harbour at dawn in most northern towns.",
                   [("Fishing Boats", "concept")], []),
}


def write_corpus(store: KnowledgeStore, embedder: MiniLMEmbeddings, scope: str = "default",
                 ) -> dict[str, str]:
    """Store the corpus (one document and one chunk per entry, entities and facts with
    embeddings and provenance). Chunk embeddings are left empty. Returns uri -> chunk id."""
    chunks: dict[str, str] = {}
    for uri, (body, _, _) in DOCS.items():
        doc = DocumentIn(scope, "evidence", uri, ids.content_hash(body + scope), title=uri)
        (chunks[uri],) = store.sync_document(doc, [body]).new_chunk_ids
    names = {n: t for _, ents, _ in DOCS.values() for n, t in ents}
    where = {n: tuple(chunks[u] for u, (_, ents, _) in DOCS.items() if n in dict(ents))
             for n in names}
    vecs = embedder.embed_documents(list(names))
    ents = [EntityIn(n, t, scope, "", 0.9, v, where[n])
            for (n, t), v in zip(names.items(), vecs, strict=True)]
    eid = {e.name: e.id for e in ents}
    facts = [(u, f) for u, (_, _, fs) in DOCS.items() for f in fs]
    f_vecs = embedder.embed_documents([f[3] for _, f in facts])
    rels = [RelationIn(eid[s], p, eid[o], sentence, scope, 0.8, v, chunk_ids=(chunks[u],))
            for (u, (s, p, o, sentence)), v in zip(facts, f_vecs, strict=True)]
    store.write_graph(ents, rels)
    return chunks
