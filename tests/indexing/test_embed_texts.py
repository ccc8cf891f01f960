"""embed_texts: one vector per text in order, identical texts embedded once, short first."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from graph_flows.indexing.embed import embed_texts


class _Recording(Embeddings):
    """Vector = [len(text)]; records every batch it is asked for."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(len(t))] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text))]


def test_order_kept_and_duplicates_embedded_once() -> None:
    emb = _Recording()
    texts = ["ccc", "a", "bb", "a", "ccc", "dddd"]
    assert embed_texts(emb, texts, batch_size=2) == [[3.0], [1.0], [2.0], [1.0], [3.0], [4.0]]
    sent = [t for call in emb.calls for t in call]
    assert sorted(sent) == ["a", "bb", "ccc", "dddd"]  # each distinct text once
    assert sent == sorted(sent, key=len)  # shortest first: batches pad to similar lengths
    assert all(len(call) <= 2 for call in emb.calls)


def test_nothing_to_embed() -> None:
    emb = _Recording()
    assert embed_texts(emb, [], batch_size=8) == []
    assert emb.calls == []
