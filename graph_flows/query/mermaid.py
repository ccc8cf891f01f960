"""Mermaid diagram of retrieved entities and facts, safe against hostile names.

Node ids are generated (``n1``, ``n2``...), never derived from user text. Every label is
quoted and every character outside a small safe set is written as a Mermaid entity code
(``#60;`` for ``<``), so quotes, brackets, pipes, newlines, ``<script>``, backticks (markdown
strings) or keywords like ``end`` / ``click`` cannot break the syntax or inject directives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_SAFE = re.compile(r"[A-Za-z0-9 .,:;!?()+\-_/@]")
MAX_LABEL = 60


def escape_label(text: str, max_len: int = MAX_LABEL) -> str:
    """Quote-safe Mermaid label text: unsafe characters as ``#<code>;`` entities."""
    flat = " ".join(str(text).split())
    if len(flat) > max_len:
        flat = flat[: max_len - 1].rstrip() + "…"
    return "".join(ch if _SAFE.fullmatch(ch) else f"#{ord(ch)};" for ch in flat) or "#32;"


def build_mermaid(
    entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]], max_nodes: int = 20
) -> str:
    """``graph LR`` of the most relevant facts' endpoints, then leftover top entities."""
    if max_nodes < 1:
        raise ValueError("max_nodes must be at least 1")
    ids: dict[str, str] = {}
    labels: dict[str, str] = {e["id"]: e["name"] for e in entities}
    edges: list[tuple[str, str, str]] = []
    for f in facts:  # most relevant first
        ends = [f["subject_id"], f["object_id"]]
        new = [e for e in dict.fromkeys(ends) if e not in ids]
        if len(ids) + len(new) > max_nodes:
            continue
        for e in new:
            ids[e] = f"n{len(ids) + 1}"
        labels.setdefault(f["subject_id"], f.get("subject", "?"))
        labels.setdefault(f["object_id"], f.get("object", "?"))
        edges.append((ids[f["subject_id"]], f["predicate"], ids[f["object_id"]]))
    for e in entities:
        if len(ids) >= max_nodes:
            break
        ids.setdefault(e["id"], f"n{len(ids) + 1}")
    lines = ["graph LR"]
    lines += [f'    {node}["{escape_label(labels.get(eid, "?"))}"]' for eid, node in ids.items()]
    lines += [f'    {a} -->|"{escape_label(p, 30)}"| {b}' for a, p, b in dict.fromkeys(edges)]
    return "\n".join(lines)
