"""The <definitions>, <facts> and <passages> sections given to the answer model.

Every text placed in a section (names, types, summaries, fact sentences, predicates,
passage titles, uris and texts) goes through :func:`graph_flows.shared.untrusted.
neutralize_tags` inside :func:`clip`, so none of it can close its section or open another;
passage texts arrive with their instruction-like spans already withheld
(:func:`graph_flows.shared.untrusted.guard_passage`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graph_flows.query import readable
from graph_flows.shared.dates import day
from graph_flows.shared.untrusted import neutralize_tags


def clip(text: str, n: int | None = None) -> str:
    """``text`` on one line, its tags neutralised, cut to ``n`` characters when given."""
    text = neutralize_tags(" ".join(str(text).split()))
    return text if n is None or len(text) <= n else text[: n - 1] + "…"


def definitions_text(entities: Sequence[dict[str, Any]]) -> str:
    """One line per entity: ``- Name (type): summary``, ``- Name (type; also: A, B): ...``
    when the documents call it by other names too (at most five shown)."""
    lines = []
    for e in entities:
        summary = clip(e.get("summary") or "(no description)", 400)
        aliases = [clip(a, 100) for a in list(e.get("aliases") or ())[:5]]
        also = f"; also: {', '.join(aliases)}" if aliases else ""
        lines.append(f"- {clip(e['name'], 200)} ({clip(e['type'], 60)}{also}): {summary}")
    return "\n".join(lines)


def _dates(f: dict[str, Any]) -> str:
    valid, invalid = day(f.get("valid_at")), day(f.get("invalid_at"))
    parts = []
    if valid:
        parts.append(f"valid from {valid}")
    if invalid:
        parts.append(f"invalid since {invalid}")
    return f" ({', '.join(parts)})" if parts else ""


def validity(fact: dict[str, Any]) -> str:
    """When a fact holds, for people: "valid from A", "valid A – B", "until B", or ""."""
    start, end = day(fact.get("valid_at")), day(fact.get("invalid_at"))
    if start and end:
        return f"valid {start} – {end}"
    if start:
        return f"valid from {start}"
    return f"until {end}" if end else ""


def label_facts(facts: list[dict[str, Any]]) -> None:
    """Give each fact its citation label F1..Fn in relevance order (in place)."""
    for i, f in enumerate(facts, start=1):
        f["label"] = f"F{i}"


def facts_text(facts: Sequence[dict[str, Any]]) -> str:
    """``[F1] fact sentence (Subject -predicate-> Object, valid from ...)``."""
    return "\n".join(
        f"[{f['label']}] {clip(f['fact'], 500)} "
        f"({clip(f['subject'], 80)} -{clip(f['predicate'], 100)}-> {clip(f['object'], 80)})"
        f"{_dates(f)}"
        for f in facts)


# A rough token count (about four characters per English token) for the passage budget.
CHARS_PER_TOKEN = 4


def fit_passages(passages: Sequence[dict[str, Any]], budget_tokens: int
                 ) -> list[dict[str, Any]]:
    """The best passages whose text fits ``budget_tokens`` together (the first one always,
    clipped to the budget), labelled P1..Pn in rank order, with their ``section`` path and
    ``document`` short name (:func:`graph_flows.query.readable.passage_fields`)."""
    out: list[dict[str, Any]] = []
    left = max(budget_tokens, 1) * CHARS_PER_TOKEN
    for p in passages:
        size = len(p.get("text", ""))
        if out and size > left:
            break
        row = dict(p, label=f"P{len(out) + 1}", **readable.passage_fields(p))
        if size > left:
            row["text"] = clip(row["text"], left)
        out.append(row)
        left -= min(size, left)
    return out


def passages_text(passages: Sequence[dict[str, Any]]) -> str:
    """``[P1] (Title, uri) passage text`` per passage."""
    return "\n".join(
        f"[{p['label']}] ({clip(p.get('title') or p.get('uri', ''), 120)}, "
        f"{clip(p.get('uri', ''), 200)}) {clip(p.get('text', ''))}"
        for p in passages)
