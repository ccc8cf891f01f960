"""Mermaid diagram that explains an answer (its evidence chain) or an entity (its labelled
facts), safe against hostile names.

An answer's diagram (:func:`build_mermaid` given the ``question``, the ``cited`` fact ids or
the ``answer`` mention) draws, in this order, while it fits ``max_nodes`` (default
:data:`MAX_NODES`): the answer's own entity (the answer's span itself when no entity is
named so); the entities the question names (the most specific first); the bridges a
follow-up round found (graph_flows.query.second_hop); the shortest paths of labelled facts
between those, over the facts given; what the answer's other cited sentences state
(``stated``: each one's own candidate); the facts the answer cites, those touching the
chain first; then the chain question entity -> bridge -> answer (and each stated node)
where no fact joins it, by the relation the sentence naming both states
(graph_flows.query.diagram_paths). It never adds facts only because they rank well:
the neighbourhood is not the explanation. Without any of the three, the best-ranked
labelled facts are grown from the first one (from ``focus`` when given: Explore's entity).

Every drawn edge carries a relation text: the fact's own (``predicate_text``, else its
relation type) or the words the sentence puts between the two names. A fact with only the
generic ``relates_to`` (a co-occurrence) is never drawn as a line: its entities may be
drawn, unconnected. A node whose name is a fragment
(:func:`graph_flows.shared.fragments.is_fragment`: a bare number among them) is not drawn
unless it is the answer. The question's entities, the answer and the cited edges are styled
(:data:`LEGEND`).

One entity is one node: nodes are keyed by entity id, never by name, so two entities that
share a name stay two nodes (labelled with their types when those tell them apart) and an
entity named differently in two facts stays one (merging a real thing's aliases is
resolution's job, at ingest). Node ids are generated (``n1``, ``n2``...), never derived from
user text. Every label is quoted and every character outside a small safe set is written
as a Mermaid entity code (``#60;`` for ``<``), so quotes, brackets, pipes, newlines,
``<script>``, backticks (markdown strings) or keywords like ``end`` / ``click`` cannot break
the syntax or inject directives; the lines without a label hold generated ids and fixed
text only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graph_flows.query.diagram_nodes import (
    answer_node,
    asked_keys,
    bridge_keys,
    node_key,
    stated_keys,
)
from graph_flows.query.diagram_paths import Drawing, Ends, chain, edge_label, grow, link_chain
from graph_flows.query.extractive import Question
from graph_flows.shared.fragments import is_fragment

_SAFE = re.compile(r"[A-Za-z0-9 .,:;!?()+\-_/@]")
MAX_NODES = 12
MAX_LABEL = 60
HEADER = "graph TD"


@dataclass(frozen=True)
class NodeStyle:
    """How a node of one role is drawn (a Mermaid ``classDef``; the UI's legend swatch)."""

    fill: str
    stroke: str
    width: int

    def mermaid(self) -> str:
        return f"fill:{self.fill},stroke:{self.stroke},stroke-width:{self.width}px"


STYLES = {"question": NodeStyle("#fef3c7", "#b45309", 2),
          "answer": NodeStyle("#dcfce7", "#15803d", 3),
          "focus": NodeStyle("#e0e7ff", "#4338ca", 2)}
CITED_COLOUR = "#2563eb"
CITED_STYLE = f"stroke:{CITED_COLOUR},stroke-width:3px"
LEGEND = {
    "question": "named in the question",
    "answer": "the answer",
    "cited": "a fact the answer cites",
    "focus": "the entity shown",
}
"""What each style means, for the legend the UI and the CLI show beside a diagram."""


def escape_label(text: str, max_len: int = MAX_LABEL) -> str:
    """Quote-safe Mermaid label text: unsafe characters as ``#<code>;`` entities."""
    flat = " ".join(str(text).split())
    if len(flat) > max_len:
        flat = flat[: max_len - 1].rstrip() + "…"
    return "".join(ch if _SAFE.fullmatch(ch) else f"#{ord(ch)};" for ch in flat) or "#32;"


def legend(diagram: str) -> list[tuple[str, str]]:
    """``(style, meaning)`` of each style ``diagram`` uses (:data:`LEGEND`), in that order."""
    used = {m for m in re.findall(r"^    class \S+ (\w+)$", diagram, re.M)}
    if re.search(r"^    linkStyle ", diagram, re.M):
        used.add("cited")
    return [(style, text) for style, text in LEGEND.items() if style in used]


def legend_text(diagram: str) -> str:
    """The legend as one line of plain text ("" when the diagram styles nothing)."""
    colours = {"question": "amber node", "answer": "green node",
               "cited": "thick blue line", "focus": "indigo node"}
    shown = [f"{colours[s]} = {text}" for s, text in legend(diagram)]
    return "legend: " + "; ".join(shown) if shown else ""


def _graph(entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]],
           ) -> tuple[dict[str, str], dict[str, str]]:
    """(entity id -> type, entity id -> display name). The first name seen for an id (the
    entity's own) is shown."""
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
    return types, names


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


def build_mermaid(
    entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]],
    max_nodes: int = MAX_NODES, *, question: Question | None = None,
    cited: Sequence[str] = (), answer: str = "", focus: str | None = None,
    bridges: Sequence[str] = (), sentences: Sequence[str] = (), context: Sequence[str] = (),
    stated: Sequence[str] = (),
) -> str:
    """``graph TD`` of an answer's evidence chain (``question``, ``cited`` fact ids in the
    order the answer says them, the ``answer`` mention, the ``bridges`` a follow-up found,
    the answer's ``sentences`` and other ``context`` sentences a missing link is read
    from, and what its other sentences ``stated``) or, without those, of the best-ranked
    labelled facts grown from ``focus`` (an entity id) or from the best fact; see the
    module docstring."""
    if max_nodes < 1:
        raise ValueError("max_nodes must be at least 1")
    types, names = _graph(entities, facts)
    by_id = {f.get("id"): f for f in facts}
    said = [by_id[i] for i in dict.fromkeys(cited) if i in by_id]
    answer_at = answer_node(names, answer, said)
    middle = [k for k in bridge_keys(names, bridges, [answer_at]) if not is_fragment(names[k])]
    hops = stated_keys(names, stated, [answer_at, *middle])
    shown = {k for k in names
             if k in (answer_at, focus, *middle, *hops) or not is_fragment(names[k])}
    edges = [(f["subject_id"], f["object_id"], f) for f in facts
             if edge_label(f) and f.get("subject_id") != f.get("object_id")
             and f.get("subject_id") in shown and f.get("object_id") in shown]
    drawing = Drawing(max_nodes)
    if question is None and not cited and not answer:
        if focus in names:
            drawing.add_node(focus, names[focus])
        grow(drawing, edges, names)
        return _render(drawing, {"focus": {focus}}, _labels(drawing.names, types))
    asked = [k for k in asked_keys(names, question) if k in shown and k not in middle]
    hops = [k for k in hops if k not in asked]
    for key in [answer_at, *asked, *middle]:
        if key is not None:
            drawing.add_node(key, names[key])
    chain(drawing, edges, names, said, shown, hops)
    link_chain(drawing, names, Ends(asked, middle, answer_at, hops), sentences, context)
    return _render(drawing, {"question": set(asked), "answer": {answer_at}},
                   _labels(drawing.names, types))


def _render(drawing: Drawing, roles: dict[str, set[str | None]],
            labels: dict[str, str]) -> str:
    """The Mermaid text: nodes, labelled edges, then the styles of the roles drawn."""
    if not drawing.names:
        return ""
    ids = {key: f"n{i}" for i, key in enumerate(drawing.names, start=1)}
    lines = [HEADER]
    lines += [f'    {ids[k]}["{escape_label(labels[k])}"]' for k in drawing.names]
    lines += [f'    {ids[a]} -->|"{escape_label(label, 30)}"| {ids[b]}'
              for a, label, b in drawing.edges]
    for role, keys in roles.items():
        marked = [ids[k] for k in drawing.names if k in keys]
        if marked:
            lines += [f"    classDef {role} {STYLES[role].mermaid()}",
                      f"    class {','.join(marked)} {role}"]
    links = [str(i) for i, cited in enumerate(drawing.edges.values()) if cited]
    if links:
        lines.append(f"    linkStyle {','.join(links)} {CITED_STYLE}")
    return "\n".join(lines)
