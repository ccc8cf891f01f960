"""Hostile content downstream: HTML, JavaScript, Mermaid syntax, SQL fragments, wildcards,
quotes, backslashes and arbitrary Unicode survive storage, retrieval, the Mermaid diagram and
the UI as inert text (hypothesis property tests; the query path on the real Postgres)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding

from graph_flows import query_flow
from graph_flows.query.analyze import InvalidQueryError
from graph_flows.query.mermaid import build_mermaid, escape_label
from graph_flows.shared.control_chars import CONTROL
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import DocumentIn, EntityIn, KnowledgeStore, RelationIn, ids
from tests.query.test_query_graph import assert_valid_mermaid
from ui.web.backend import md_escape
from ui.web.diagram import mermaid_html

HOSTILE = [
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "javascript:alert(1)",
    "\"><svg/onload=alert(1)>", "'; DROP TABLE entities; --", "Robert'); DELETE FROM x;--",
    "%", "_", "%_%", "100%", "a_b", "\\", "\\\\%", "'", '"', "`", "```", "end", "graph TD",
    "click n1 call alert()", "%%{init: {'securityLevel':'loose'}}%%", "A --> B", "a]b[c",
    "x|y", "{{curly}}", "#quot;", "#60;", "&lt;b&gt;", "$x^2$", "![img](http://e/x.png)",
    "[link](javascript:alert(1))", "**bold**", "Ω≈ç√∫", "日本語", "👩‍💻", "\u202eevil",
    "a\u200bb", "line\nbreak", "tab\there", "-- comment", "/* c */", "$$", "E'\\x41'",
]
_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
hostile_text = st.one_of(st.sampled_from(HOSTILE), st.text(_CHARS, min_size=1, max_size=80),
                         st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=4).map("".join))
# names as the indexing pipeline would store them: trimmed, something visible
names_st = hostile_text.map(lambda s: " ".join(s.split())).filter(
    lambda s: 0 < len(s) <= 200 and any(c.isalnum() for c in s))
queries_st = st.one_of(hostile_text, st.text(_CHARS, min_size=1, max_size=300)).filter(
    lambda q: q.strip() and len(q.encode("utf-8")) <= 10_000)


# -- Mermaid builder ------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(hostile_text, min_size=1, max_size=12), st.lists(hostile_text, max_size=12),
       st.integers(1, 30))
def test_build_mermaid_never_raises_and_is_always_valid(
        entity_names: list[str], predicates: list[str], max_nodes: int) -> None:
    ents = [{"id": f"e{i}", "name": n, "type": "concept"} for i, n in enumerate(entity_names)]
    facts = [{"subject_id": f"e{i % len(ents)}", "object_id": f"e{(i + 1) % len(ents)}",
              "predicate": p, "subject": ents[i % len(ents)]["name"],
              "object": ents[(i + 1) % len(ents)]["name"]} for i, p in enumerate(predicates)]
    diagram = build_mermaid(ents, facts, max_nodes=max_nodes)
    assert_valid_mermaid(diagram)
    labels = [line.split('"')[1] for line in diagram.split("\n")[1:] if '"' in line]
    for bad in ("<", ">", "%%", "`", "\n", "&", "'", "[", "]", "|", "{"):
        assert not any(bad in label for label in labels), (bad, labels)


@settings(max_examples=200, deadline=None)
@given(hostile_text)
def test_escape_label_and_ui_escaping_render_hostile_text_inert(value: str) -> None:
    label = escape_label(value)
    assert all(c.isalnum() or c in " .,:;!?()+-_/@#…" for c in label), label
    # every markdown/HTML special character is backslash-escaped: none is left bare
    bare = re.sub(r"\\.", "", md_escape(value))
    assert not set(bare) & set("\\`*_{}[]()#+-.!|<>~$&:\"'=^"), bare
    page = mermaid_html(build_mermaid([{"id": "e", "name": value, "type": "x"}], []))
    diagram_part = page.split('<pre class="mermaid">', 1)[1].split("</pre>", 1)[0]
    assert "<" not in diagram_part


# -- the query path -------------------------------------------------------------------------
_EMB = DeterministicFakeEmbedding(size=384)


@pytest.fixture
def hostile_resources(store: KnowledgeStore) -> Iterator[Resources]:
    res = Resources(Settings(_env_file=None, chat_model="none", database_url=None), store,
                    _EMB, chat_override=NO_LLM)
    with use_resources(res):
        yield res



def invoke_or_refused(payload: dict[str, Any]) -> dict[str, Any] | None:
    """``query_flow.invoke(payload)``; None when what a user typed (the query, a hint) holds
    a control character, which the graph refuses with one line before any node runs."""
    typed = [payload["query"], *payload.get("entity_hints", [])]
    if any(CONTROL.search(t) for t in typed):
        with pytest.raises(InvalidQueryError, match="control character"):
            query_flow.invoke(payload)
        return None
    return query_flow.invoke(payload)

def write_names(store: KnowledgeStore, scope: str, names: list[str],
                predicate: str = "relates_to") -> list[EntityIn]:
    """Store ``names`` (and facts chaining them) under ``scope``; return the entities."""
    body = "\n".join(names)
    doc = DocumentIn(scope=scope, source="hostile", uri=f"{uuid.uuid4().hex}.md",
                     content_hash=ids.content_hash(body + scope))
    (chunk,) = store.sync_document(doc, [body or "empty"]).new_chunk_ids
    ents = [EntityIn(n, "concept", scope, f"About {n}", 0.9, _EMB.embed_query(n), (chunk,))
            for n in dict.fromkeys(names)]
    rels = [RelationIn(a.id, predicate, b.id, f"{a.name} relates to {b.name}", scope, 0.8,
                       _EMB.embed_query(a.name + b.name), chunk_ids=(chunk,))
            for a, b in zip(ents, ents[1:], strict=False)]
    store.write_graph(ents, rels)
    return ents


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(names_st, min_size=1, max_size=5, unique_by=lambda s: s.casefold()),
       queries_st)
@pytest.mark.slow
def test_query_path_with_hostile_names_and_queries(
        hostile_resources: Resources, names: list[str], query: str) -> None:
    scope = f"h-{uuid.uuid4().hex[:10]}"
    stored = write_names(hostile_resources.store, scope, names)
    out = invoke_or_refused({"query": query, "scope": scope})
    if out is not None:
        assert_valid_mermaid(out["mermaid"])
        assert isinstance(out["answer"], str)
        assert {e["name"] for e in out["entities"]} <= {e.name for e in stored}
    # the exact name finds the exact stored name, byte-identical
    for name in names:
        hit = invoke_or_refused({"query": name, "scope": scope, "entity_hints": [name]})
        if hit is None:
            continue
        assert_valid_mermaid(hit["mermaid"])
        found = [e["name"] for e in hit["entities"]]
        assert name in found, (name, found)
        assert [n.encode() for n in found if n == name] == [name.encode()]


def test_sql_wildcards_do_not_match_everything(hostile_resources: Resources) -> None:
    scope = "wild"
    write_names(hostile_resources.store, scope, ["Alpha", "Beta", "100% Cotton", "snake_case"])
    for query, expected in (("%", set()), ("_", set()), ("100%", {"100% Cotton"})):
        out = query_flow.invoke({"query": query, "scope": scope},
                                context={"fallback_ratio": 0.0})
        got = {e["name"] for e in out["entities"] if e["score"] > 0}
        assert expected <= got and "Alpha" not in got and "Beta" not in got, (query, got)
        assert_valid_mermaid(out["mermaid"])
