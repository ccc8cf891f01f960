"""The query loop's two-hop corpus (tests/evidence_corpus.py plus passages like the
question, with passage vectors) and the planner replies its tests script."""

from __future__ import annotations

from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import DocumentIn, KnowledgeStore, evidence, ids
from tests.evidence_corpus import write_corpus

FOLLOW = {"sufficient": False, "sub_question": "Where did Orsina Kael grow up?",
          "bridge_entity": "Orsina Kael", "reason": "the founder's childhood is missing"}
ENOUGH = {"sufficient": True, "reason": "the evidence names the town"}

# passages like the question (prizes, founders, childhoods) without entities: more than a
# round's passages, so a follow-up has something to add
FILLERS = [f"The founder of the {prize} Prize spent her childhood in {town}, far from {sea}."
           for prize, town, sea in [
               ("Aster", "Brem", "the coast"), ("Birch", "Calto", "the hills"),
               ("Cobalt", "Dunmore", "the river"), ("Delft", "Esker", "the lakes"),
               ("Ember", "Fallow", "the sea"), ("Flint", "Gorse", "the marsh"),
               ("Garnet", "Holm", "the forest"), ("Heron", "Ilse", "the plains"),
               ("Iris", "Jura", "the dunes"), ("Juniper", "Kesh", "the fjord"),
               ("Kestrel", "Lorn", "the cliffs"), ("Larch", "Mire", "the moor")]]


def seed_two_hop(store: KnowledgeStore, embedder: MiniLMEmbeddings | None = None) -> None:
    """Store the two-hop corpus and the filler passages, passages embedded (recipe 'ppr')."""
    embedder = embedder or MiniLMEmbeddings()
    write_corpus(store, embedder)
    for i, text in enumerate(FILLERS):
        doc = DocumentIn("default", "evidence", f"filler-{i}.md", ids.content_hash(text),
                         title=f"filler {i}")
        store.sync_document(doc, [text])
    with store.transaction() as conn:
        evidence.fill_chunk_embeddings(conn, embedder.embed_documents)
