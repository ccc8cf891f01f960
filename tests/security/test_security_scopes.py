"""Scope isolation: data written under one scope never appears in another scope's retrieval,
context (definitions, facts) or diagram, whatever the query (hypothesis, real Postgres)."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph_flows import query_flow
from graph_flows.shared.resources import Resources
from tests.query.test_query_graph import assert_valid_mermaid
from tests.security.test_security_hostile import (
    hostile_resources,
    invoke_or_refused,
    names_st,
    queries_st,
    write_names,
)

__all__ = ["hostile_resources"]  # the fixture, re-exported for pytest


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(a_names=st.lists(names_st, min_size=1, max_size=4, unique_by=str.casefold),
       b_names=st.lists(names_st, min_size=1, max_size=4, unique_by=str.casefold),
       query=queries_st, use_a_name=st.booleans())
@pytest.mark.slow
def test_other_scopes_data_never_leaks(hostile_resources: Resources, a_names: list[str],
                                       b_names: list[str], query: str,
                                       use_a_name: bool) -> None:
    token = f"qz{uuid.uuid4().hex[:10]}"  # unique marker of scope A's data
    scope_a, scope_b = f"a-{token}", f"b-{uuid.uuid4().hex[:10]}"
    a_ents = write_names(hostile_resources.store, scope_a, [f"{n} {token}" for n in a_names])
    write_names(hostile_resources.store, scope_b, b_names)
    a_ids = {e.id for e in a_ents}
    queries = [query, *(e.name for e in a_ents)] if use_a_name else [query]
    for q in queries:
        if len(q.encode()) > 10_000:
            continue
        hints = [e.name for e in a_ents][:50]
        out = invoke_or_refused({"query": q, "scope": scope_b, "entity_hints": hints})
        if out is None:
            continue
        assert_valid_mermaid(out["mermaid"])
        assert all(e["scope"] == scope_b for e in out["entities"])
        assert not {e["id"] for e in out["entities"]} & a_ids
        assert not {f["subject_id"] for f in out["facts"]} & a_ids
        assert not {f["object_id"] for f in out["facts"]} & a_ids
        visible = json.dumps({k: out.get(k) for k in (
            "entities", "facts", "definitions", "facts_text", "mermaid", "answer",
            "citations")}, ensure_ascii=False)
        assert token not in visible
        assert all(i not in visible for i in a_ids)


def test_same_name_in_two_scopes_stays_apart(hostile_resources: Resources) -> None:
    write_names(hostile_resources.store, "tenant-a", ["Shared Name", "Alpha Secret"])
    write_names(hostile_resources.store, "tenant-b", ["Shared Name", "Beta Public"])
    out = query_flow.invoke({"query": "Shared Name Alpha Secret", "scope": "tenant-b"})
    names = [e["name"] for e in out["entities"]]
    assert "Shared Name" in names and "Alpha Secret" not in names
    assert all(e["scope"] == "tenant-b" for e in out["entities"])
    assert "Alpha" not in out["definitions"] + out["facts_text"] + out["mermaid"]
