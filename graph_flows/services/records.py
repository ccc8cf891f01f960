"""Plain JSON records of retrieved entities and facts, as the use cases return them."""

from __future__ import annotations

from typing import Any


def iso(value: Any) -> str | None:
    """ISO 8601 text of a date/datetime (None stays None)."""
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def relation_record(f: dict[str, Any]) -> dict[str, Any]:
    """A retrieved fact: ids, triple, sentence, confidence, dates, sources, methods."""
    out = {k: f.get(k) for k in ("id", "subject", "predicate", "predicate_text", "object",
                                 "fact", "confidence")}
    out.update(subject_id=f["subject_id"], object_id=f["object_id"],
               valid_at=iso(f.get("valid_at")), invalid_at=iso(f.get("invalid_at")),
               sources=f.get("sources", []), methods=list(f.get("methods", [])))
    if f.get("label"):
        out["label"] = f["label"]
    if f.get("hop") is not None:
        out["hop"] = f["hop"]
    return out


def entity_record(e: dict[str, Any]) -> dict[str, Any]:
    """A retrieved entity: id, name, type, aliases (its other names), description,
    confidence, methods."""
    return {"id": e["id"], "name": e["name"], "type": e["type"],
            "aliases": list(e.get("aliases") or ()),
            "description": e.get("summary", ""), "confidence": e.get("confidence"),
            "methods": list(e.get("methods", []))}
