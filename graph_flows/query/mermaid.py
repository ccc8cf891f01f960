"""Mermaid diagram that explains an answer: the cited facts and the paths between the
question's entities, safe against hostile names.

What is drawn, in this order, while it fits ``max_nodes``: the facts the answer cites; the
shortest paths (over the retrieved facts, best-ranked edges first) between the entities the
question names and the cited facts' ends; then the best-ranked facts that touch what is
drawn, so the diagram stays connected instead of showing unrelated pairs. One entity is
one node: nodes are keyed by entity id, never by name, so two entities that share a name
stay two nodes (labelled with their types when those tell them apart) and an entity named
differently in two facts stays one (merging a real thing's aliases into one entity is
resolution's job, at ingest). An edge carries the fact's
own predicate text (``predicate_text``, else its relation type); a fact with only the
generic ``relates_to`` is a plain line. With no fact at all, the top entities are drawn.
The entities the question names and the cited edges are highlighted.

Node ids are generated (``n1``, ``n2``...), never derived from user text. Every label is
quoted and every character outside a small safe set is written as a Mermaid entity code
(``#60;`` for ``<``), so quotes, brackets, pipes, newlines, ``<script>``, backticks (markdown
strings) or keywords like ``end`` / ``click`` cannot break the syntax or inject directives;
the lines without a label hold generated ids and fixed text only.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from graph_flows.query.extractive import Question, terms

_SAFE = re.compile(r"[A-Za-z0-9 .,:;!?()+\-_/@]")
_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
MAX_LABEL = 60
GENERIC = "relates_to"
MAX_SEEDS = 6  # question entities and cited ends whose connecting paths are drawn
ASKED_STYLE = "classDef asked fill:#fef3c7,stroke:#b45309"
CITED_STYLE = "stroke:#b45309,stroke-width:2px"


def escape_label(text: str, max_len: int = MAX_LABEL) -> str:
    """Quote-safe Mermaid label text: unsafe characters as ``#<code>;`` entities."""
    flat = " ".join(str(text).split())
    if len(flat) > max_len:
        flat = flat[: max_len - 1].rstrip() + "…"
    return "".join(ch if _SAFE.fullmatch(ch) else f"#{ord(ch)};" for ch in flat) or "#32;"


def node_key(name: str) -> str:
    """A name with case, punctuation and spacing folded (to tell alike names apart)."""
    return " ".join(_NOT_WORD.sub(" ", str(name).casefold()).split()) or str(name)


def edge_label(fact: dict[str, Any]) -> str:
    """The fact's own predicate text, else its relation type; "" for the generic one."""
    label = " ".join(str(fact.get("predicate_text") or fact.get("predicate") or "").split())
    return "" if label in ("", GENERIC) else label


@dataclass
class _Drawing:
    """Nodes (key -> display name, in order) and edges drawn so far, within ``limit``."""

    limit: int
    names: dict[str, str] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], bool] = field(default_factory=dict)  # -> cited

    def fits(self, keys: Iterable[str]) -> bool:
        return len(self.names.keys() | set(keys)) <= self.limit

    def add_node(self, key: str, name: str) -> bool:
        if key not in self.names and not self.fits([key]):
            return False
        self.names.setdefault(key, name)
        return True

    def add_edges(self, edges: Sequence[tuple[str, str, dict[str, Any]]],
                  names: dict[str, str], cited: frozenset[str] = frozenset()) -> bool:
        """Add all of ``edges`` (a path) or none of them."""
        if not self.fits(k for a, b, _ in edges for k in (a, b)):
            return False
        for a, b, fact in edges:
            self.names.setdefault(a, names[a])
            self.names.setdefault(b, names[b])
            label = edge_label(fact)
            if not label and any({x, y} == {a, b} for x, _, y in self.edges):
                continue  # a plain line beside a labelled edge says nothing more
            key = (a, label, b)
            self.edges[key] = self.edges.get(key, False) or fact.get("id") in cited
        return True


def _graph(entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]],
           ) -> tuple[dict[str, str], dict[str, str], list[tuple[str, str, dict[str, Any]]]]:
    """(entity id -> type, entity id -> display name, edges (id, id, fact) in rank order,
    self-loops dropped). The first name seen for an id (the entity's own) is shown."""
    types: dict[str, str] = {}
    names: dict[str, str] = {}
    pairs = [(e.get("id"), e.get("name"), e.get("type")) for e in entities]
    pairs += [(f.get(f"{end}_id"), f.get(end), None)
              for f in facts for end in ("subject", "object")]
    for eid, name, kind in pairs:
        if eid is None:
            continue
        names.setdefault(eid, str(name if name is not None else "?"))
        if kind and eid not in types:
            types[eid] = str(kind)
    edges = [(f["subject_id"], f["object_id"], f) for f in facts
             if f["subject_id"] != f["object_id"]]
    return types, names, edges


def _labels(drawn: dict[str, str], types: dict[str, str]) -> dict[str, str]:
    """Display text per drawn node: the name, plus the type where another drawn node has
    the same name (case, punctuation and spacing folded) and the types differ."""
    spelled: dict[str, list[str]] = {}
    for key, name in drawn.items():
        spelled.setdefault(node_key(name), []).append(key)
    labels = dict(drawn)
    for keys in spelled.values():
        if len(keys) > 1 and len({types.get(k) for k in keys}) > 1:
            labels.update({k: f"{drawn[k]} ({types[k]})" for k in keys if types.get(k)})
    return labels


def _shortest(edges: Sequence[tuple[str, str, dict[str, Any]]], start: str, goal: str,
              ) -> list[tuple[str, str, dict[str, Any]]] | None:
    """The fewest facts linking ``start`` to ``goal`` (either direction), preferring the
    best-ranked edge at each step; None when they are not connected."""
    adjacent: dict[str, list[tuple[str, tuple[str, str, dict[str, Any]]]]] = {}
    for edge in edges:
        adjacent.setdefault(edge[0], []).append((edge[1], edge))
        adjacent.setdefault(edge[1], []).append((edge[0], edge))
    came: dict[str, tuple[str, tuple[str, str, dict[str, Any]]] | None] = {start: None}
    todo = deque([start])
    while todo:
        here = todo.popleft()
        if here == goal:
            path = []
            while came[here] is not None:
                here, edge = came[here]  # type: ignore[misc]
                path.append(edge)
            return path[::-1]
        for there, edge in adjacent.get(here, []):
            if there not in came:
                came[there] = (here, edge)
                todo.append(there)
    return None


def asked_keys(names: dict[str, str], question: Question | None) -> list[str]:
    """Nodes whose name the question spells out (every content word of the name in it)."""
    if question is None:
        return []
    asked = question.all
    return [k for k, name in names.items() if (words := terms(name)) and words <= asked]


def build_mermaid(
    entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]], max_nodes: int = 20,
    *, question: Question | None = None, cited: Sequence[str] = (),
) -> str:
    """``graph LR`` of the cited facts (ids in ``cited``), the paths between the entities
    the ``question`` names, and the best-ranked facts connected to them."""
    if max_nodes < 1:
        raise ValueError("max_nodes must be at least 1")
    types, names, edges = _graph(entities, facts)
    drawing = _Drawing(max_nodes)
    cited_ids = frozenset(cited)
    for edge in (e for e in edges if e[2].get("id") in cited_ids):
        drawing.add_edges([edge], names, cited_ids)
    asked = asked_keys(names, question)
    seeds = list(dict.fromkeys([*asked, *drawing.names]))[:MAX_SEEDS]
    for a, b in combinations(seeds, 2):
        path = _shortest(edges, a, b)
        if path:
            drawing.add_edges(path, names, cited_ids)
    for key in asked:
        drawing.add_node(key, names[key])
    _grow(drawing, edges, names, cited_ids)
    for e in entities:
        if drawing.edges or not drawing.add_node(e["id"], names[e["id"]]):
            break
    return _render(drawing, set(asked), _labels(drawing.names, types))


def _grow(drawing: _Drawing, edges: Sequence[tuple[str, str, dict[str, Any]]],
          names: dict[str, str], cited: frozenset[str]) -> None:
    """Add the best-ranked facts touching the drawing (the best fact when it is empty)
    until nothing more fits or connects."""
    left = list(edges)
    grown = True
    while grown and left:
        grown = False
        for edge in list(left):
            touches = not drawing.names or edge[0] in drawing.names or edge[1] in drawing.names
            if touches:
                left.remove(edge)
                grown = drawing.add_edges([edge], names, cited) or grown
                if grown:
                    break


def _render(drawing: _Drawing, asked: set[str], labels: dict[str, str]) -> str:
    ids = {key: f"n{i}" for i, key in enumerate(drawing.names, start=1)}
    lines = ["graph LR"]
    lines += [f'    {ids[k]}["{escape_label(labels[k])}"]' for k in drawing.names]
    for a, label, b in drawing.edges:
        lines.append(f'    {ids[a]} -->|"{escape_label(label, 30)}"| {ids[b]}' if label
                     else f"    {ids[a]} --- {ids[b]}")
    marked = [ids[k] for k in drawing.names if k in asked]
    if marked:
        lines += [f"    {ASKED_STYLE}", f"    class {','.join(marked)} asked"]
    links = [str(i) for i, cited in enumerate(drawing.edges.values()) if cited]
    if links:
        lines.append(f"    linkStyle {','.join(links)} {CITED_STYLE}")
    return "\n".join(lines)
