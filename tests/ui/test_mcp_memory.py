"""MCP keeps what it is told (issue 15.5): the SDK's own client against the server in-process,
on the seeded store (no-LLM mode): predicate text and types as given, unknown start dates,
one-line argument errors, unknown sources refused, the package version."""

from __future__ import annotations

import asyncio
from importlib import metadata
from typing import Any

from mcp import Client
from sqlalchemy import text

from graph_flows.shared.resources import Resources
from tests.ui.test_mcp_server import _call, _error
from ui.mcp import DISTRIBUTION, build_server


def _run(scenario: Any) -> Any:
    async def go() -> Any:
        async with Client(build_server("default")) as client:
            return await scenario(client)
    return asyncio.run(go())


def test_remember_keeps_the_predicate_text_types_and_unknown_dates(resources: Resources) -> None:
    async def scenario(client: Client) -> tuple[dict[str, Any], ...]:
        bought = await _call(client, "remember", {
            "subject": "Charles Babbage", "predicate": "acquired", "object": "Punched Cards",
            "fact": "Charles Babbage acquired a stock of punched cards.",
            "object_type": "concept"})
        studied = await _call(client, "remember", {
            "subject": "Charles Babbage", "predicate": "Studied", "object": "Punched Cards",
            "fact": "Charles Babbage studied punched cards.", "valid_at": "1834"})
        linked = await _call(client, "remember", {
            "subject": "Charles Babbage", "predicate": "uses", "object": "Punched Cards",
            "fact": "Charles Babbage uses punched cards."})
        found = await _call(client, "recall", {"query": "Charles Babbage punched cards"})
        queried = await _call(client, "kag_query", {"query": "Charles Babbage",
                                                    "entities": ["Charles Babbage"]})
        return bought, studied, linked, found, queried

    bought, studied, linked, found, queried = _run(scenario)
    # The caller's words stay; the relation type is only the label.
    assert (bought["predicate"], bought["predicate_text"]) == ("relates_to", "acquired")
    assert (studied["predicate"], studied["predicate_text"]) == ("relates_to", "Studied")
    assert (linked["predicate"], linked["predicate_text"]) == ("uses", None)
    # Two statements between the same pair with the same type are two facts.
    assert len({bought["fact_id"], studied["fact_id"], linked["fact_id"]}) == 3
    # A given type is kept (a new "concept" entity), an omitted one links the stored entity.
    assert bought["object_type"] == "concept" and linked["object_type"] == "technology"
    # No date given: unknown, not "now"; a bare year is its first day.
    assert bought["valid_at"] is None
    assert studied["valid_at"].startswith("1834-01-01")
    by_id = {f["id"]: f for f in found["facts"]}
    assert by_id[bought["fact_id"]]["predicate_text"] == "acquired"
    assert by_id[bought["fact_id"]]["valid_at"] is None
    rels = {r["id"]: r for r in queried["relations"]}
    assert rels[studied["fact_id"]]["predicate_text"] == "Studied"
    with resources.store.connect() as conn:
        row = conn.execute(text(
            "SELECT predicate, predicate_text, valid_at FROM relations WHERE id = :id"),
            {"id": bought["fact_id"]}).one()
    assert tuple(row) == ("relates_to", "acquired", None)


def test_correct_keeps_the_predicate_text_of_the_replacement(resources: Resources) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        stored = await _call(client, "remember", {
            "subject": "Ada Lovelace", "predicate": "corresponded with",
            "object": "Charles Babbage", "fact": "Ada Lovelace wrote to Charles Babbage."})
        return await _call(client, "correct", {
            "fact_id": stored["fact_id"],
            "replacement": "Ada Lovelace corresponded with Charles Babbage for years."})

    fixed = _run(scenario)
    assert fixed["replacement"]["predicate_text"] == "corresponded with"
    assert fixed["replacement"]["subject_type"] == "person"


def test_bad_arguments_are_one_line_errors(resources: Resources) -> None:
    async def scenario(client: Client) -> dict[str, str]:
        schema = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        assert all(s.get("additionalProperties") is False for s in schema.values())
        assert schema["kag_query"]["properties"]["max_hops"]["maximum"] == 3
        return {
            "hops": await _error(client, "kag_query", {"query": "Ada", "max_hops": 4}),
            "limit": await _error(client, "recall", {"query": "Ada", "limit": 0}),
            "typo": await _error(client, "kag_query", {"question": "Ada"}),
            "extra": await _error(client, "remember", {
                "subject": "A", "predicate": "uses", "object": "B", "fact": "A uses B.",
                "colour": "red"}),
            "type": await _error(client, "kag_query", {"query": "Ada", "max_hops": "two"}),
            "source": await _error(client, "kag_query", {"query": "Ada",
                                                         "source_id": "elsewhere"}),
            "year": await _error(client, "recall", {"query": "Ada", "as_of": "20199"}),
        }

    errors = _run(scenario)
    assert all("\n" not in e and "pydantic" not in e for e in errors.values()), errors
    # The same words as the use case's own check (graph_flows.services.ask.kag_query).
    assert errors["hops"] == "Error executing tool kag_query: max_hops must be 1..3, got 4."
    assert errors["limit"] == "Error executing tool recall: limit must be 1..100, got 0."
    assert "unknown argument 'question'; did you mean 'query'?" in errors["typo"]
    assert "missing argument 'query'" in errors["typo"]
    assert "unknown argument 'colour'" in errors["extra"]
    assert "max_hops" in errors["type"] and "integer" in errors["type"]
    assert "no source 'elsewhere' in scope 'default'" in errors["source"]
    assert "history" in errors["source"]  # the known sources are named
    assert "as_of '20199' is not a date" in errors["year"]


def test_server_info_carries_the_package_version(resources: Resources) -> None:
    async def scenario(client: Client) -> Any:
        return client.server_info

    info = _run(scenario)
    assert info is not None and info.name == "krag"
    assert info.version == metadata.version(DISTRIBUTION)


def test_an_undated_fact_that_replaces_a_value_is_valid_from_the_change(
        resources: Resources) -> None:
    """storage.supersede's documented rule: the undated newer value holds from the moment it
    replaced the old one (so "as of" a past date still sees the old value)."""
    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        base = {"subject": "Acme Corp", "predicate": "is led by", "attribute": "ceo"}
        first = await _call(client, "remember", {
            **base, "object": "Ada Lovelace", "fact": "Acme Corp is led by Ada Lovelace.",
            "valid_at": "2015"})
        second = await _call(client, "remember", {
            **base, "object": "Charles Babbage",
            "fact": "Acme Corp is led by Charles Babbage."})
        return first, second

    first, second = _run(scenario)
    assert first["valid_at"].startswith("2015-01-01")
    assert [s["fact_id"] for s in second["superseded"]] == [first["fact_id"]]
    assert second["valid_at"] is not None
    assert second["valid_at"] == second["superseded"][0]["invalid_at"]
