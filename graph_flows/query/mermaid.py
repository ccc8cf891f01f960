"""Mermaid diagram that explains an answer (its evidence chain) or an entity (its labelled
facts), safe against hostile names.

An answer's diagram (:func:`build_mermaid` given the ``question``, the ``cited`` fact ids or
the ``answer`` mention) draws, in this order, while it fits ``max_nodes`` (default
:data:`MAX_NODES`): the answer's own entity; the facts the answer cites; the entities the
question names (the most specific first); the shortest paths of labelled facts between
those, over the facts given; then the other entities of the cited facts as nodes. It never
adds facts only because they rank well: the neighbourhood is not the explanation. Without
any of the three, the best-ranked labelled facts are grown from the first one (from
``focus`` when given: Explore's entity).

Every drawn edge carries the fact's own relation text (``predicate_text``, else its
relation type). A fact with only the generic ``relates_to`` (a co-occurrence) is never
drawn as a line: its entities may be drawn, unconnected. A node whose name is a fragment
(:func:`graph_flows.shared.fragments.is_fragment`) is not drawn unless it is the answer.
The question's entities, the answer and the cited edges are styled (:data:`LEGEND`).

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
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from graph_flows.query.extractive import Question, terms
from graph_flows.shared.fragments import FUNCTION_WORDS, is_fragment

_SAFE = re.compile(r"[A-Za-z0-9 .,:;!?()+\-_/@]")
_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
MAX_NODES = 12
MAX_LABEL = 60
GENERIC = "relates_to"
MAX_ASKED = 3  # entities the question names drawn at most (the most specific first)
MAX_PATH = 3  # facts in a connecting path at most
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
Edge = tuple[str, str, dict[str, Any]]


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

    def add_edges(self, edges: Sequence[Edge], names: dict[str, str],
                  cited: frozenset[str] = frozenset()) -> bool:
        """Add all of ``edges`` (a path of labelled facts) or none of them."""
        if not self.fits(k for a, b, _ in edges for k in (a, b)):
            return False
        for a, b, fact in edges:
            self.names.setdefault(a, names[a])
            self.names.setdefault(b, names[b])
            key = (a, edge_label(fact), b)
            self.edges[key] = self.edges.get(key, False) or fact.get("id") in cited
        return True


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


def _shortest(edges: Sequence[Edge], start: str, goal: str) -> list[Edge] | None:
    """The fewest facts (at most :data:`MAX_PATH`) linking ``start`` to ``goal`` (either
    direction), preferring the best-ranked edge at each step; None when not connected."""
    adjacent: dict[str, list[tuple[str, Edge]]] = {}
    for edge in edges:
        adjacent.setdefault(edge[0], []).append((edge[1], edge))
        adjacent.setdefault(edge[1], []).append((edge[0], edge))
    came: dict[str, tuple[str, Edge] | None] = {start: None}
    depth = {start: 0}
    todo = deque([start])
    while todo:
        here = todo.popleft()
        if here == goal:
            path = []
            while came[here] is not None:
                here, edge = came[here]  # type: ignore[misc]
                path.append(edge)
            return path[::-1]
        if depth[here] >= MAX_PATH:
            continue
        for there, edge in adjacent.get(here, []):
            if there not in came:
                came[there] = (here, edge)
                depth[there] = depth[here] + 1
                todo.append(there)
    return None


def asked_keys(names: dict[str, str], question: Question | None) -> list[str]:
    """Nodes the question names: every content word of the name in the question, one of
    them a name of the question (not "President" for "who was the president"), the most
    specific (most words) first, none whose words are inside one already kept; then, for a
    name of the question no such node holds, the shortest node whose last word it is
    ("Edgar F. Codd" for "Codd's": a name's head comes last). At most :data:`MAX_ASKED`."""
    if question is None:
        return []
    words = {k: terms(name) for k, name in names.items()}
    found = [k for k, w in words.items() if w and w <= question.all and w & question.names]
    found.sort(key=lambda k: -len(words[k]))
    kept: list[str] = []
    for key in found:
        if not any(words[key] <= words[k] for k in kept):
            kept.append(key)
    covered = set().union(*(words[k] for k in kept))
    for stem in sorted(question.names - covered):
        heads = [k for k, name in names.items()
                 if words[k] and _last_term(name) == stem and k not in kept]
        if heads:
            kept.append(min(heads, key=lambda k: len(words[k])))
    return kept[:MAX_ASKED]


def _last_term(name: str) -> str:
    """The stem of a name's last content word ("" when none)."""
    tail = [t for w in name.split() if (t := terms(w))]
    return next(iter(tail[-1])) if tail else ""


def answer_key(names: dict[str, str], answer: str, preferred: Iterable[str] = ()) -> str | None:
    """The entity the answer mention names: the same name folded, else a name holding the
    mention's words or held by them (entities of ``preferred``, the cited facts, first);
    None when none does."""
    wanted = node_key(clean_mention(answer))
    if not wanted:
        return None
    order = list(dict.fromkeys([*preferred, *names]))
    for key in order:
        if node_key(names[key]) == wanted:
            return key
    padded = f" {wanted} "
    for key in order:
        name = node_key(names[key])
        if name and not is_fragment(names[key]) and (
                f" {name} " in padded or padded in f" {name} "):
            return key
    return None


def clean_mention(text: str) -> str:
    """A mention as a node name: no leading lower-case function word ("the"), no trailing
    possessive ("Hall's" -> "Hall")."""
    words = str(text).split()
    while words and words[0].islower() and words[0] in FUNCTION_WORDS:
        words = words[1:]
    flat = re.sub(r"(?<=\w)['’]s$", "", " ".join(words))
    return re.sub(r"(?<=s)['’]$", "", flat)


def build_mermaid(
    entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]],
    max_nodes: int = MAX_NODES, *, question: Question | None = None,
    cited: Sequence[str] = (), answer: str = "", focus: str | None = None,
) -> str:
    """``graph TD`` of an answer's evidence chain (``question``, ``cited`` fact ids in the
    order the answer says them, the ``answer`` mention) or, without those, of the
    best-ranked labelled facts grown from ``focus`` (an entity id) or from the best fact;
    see the module docstring."""
    if max_nodes < 1:
        raise ValueError("max_nodes must be at least 1")
    types, names = _graph(entities, facts)
    by_id = {f.get("id"): f for f in facts}
    said = [by_id[i] for i in dict.fromkeys(cited) if i in by_id]
    answer_at = _answer_node(names, answer, said)
    shown = {k for k in names if k in (answer_at, focus) or not is_fragment(names[k])}
    edges = [(f["subject_id"], f["object_id"], f) for f in facts
             if edge_label(f) and f.get("subject_id") != f.get("object_id")
             and f.get("subject_id") in shown and f.get("object_id") in shown]
    drawing = _Drawing(max_nodes)
    if question is None and not cited and not answer:
        if focus in names:
            drawing.add_node(focus, names[focus])
        _grow(drawing, edges, names)
        return _render(drawing, {"focus": {focus}}, _labels(drawing.names, types))
    asked = [k for k in asked_keys(names, question) if k in shown]
    for key in [answer_at, *asked]:
        if key is not None:
            drawing.add_node(key, names[key])
    _chain(drawing, edges, names, said, shown)
    return _render(drawing, {"question": set(asked), "answer": {answer_at}},
                   _labels(drawing.names, types))


def _answer_node(names: dict[str, str], answer: str, said: Sequence[dict[str, Any]],
                 ) -> str | None:
    """The key of the answer's node, added to ``names`` when no entity has the mention's
    name (then labelled by the mention, as the answer writes it); None without one."""
    mention = clean_mention(answer)
    if not mention:
        return None
    ends = [f.get(f"{end}_id") for f in said for end in ("subject", "object")]
    key = answer_key(names, mention, [k for k in ends if k in names])
    if key is None:
        key = "answer:"
    if key == "answer:" or node_key(names[key]) != node_key(mention):
        names[key] = mention  # the entity as the answer names it ("Hall", not "Hall Hall")
    return key


def _chain(drawing: _Drawing, edges: Sequence[Edge], names: dict[str, str],
           said: Sequence[dict[str, Any]], shown: set[str]) -> None:
    """The shortest labelled paths between the nodes drawn (the answer and the question's
    entities), then the facts the answer says, in its order: a labelled fact as its edge,
    a co-occurrence as its two entities, unconnected; then the shortest labelled paths from
    the answer and the question's entities to those; each while it fits."""
    cited = frozenset(f.get("id") for f in said)
    seeds = list(drawing.names)
    _connect(drawing, edges, names, cited, combinations(seeds, 2))
    labelled = {e[2].get("id"): e for e in edges}
    for fact in said:
        if fact.get("id") in labelled:
            drawing.add_edges([labelled[fact["id"]]], names, cited)
            continue
        for key in (fact.get("subject_id"), fact.get("object_id")):
            if key in shown:
                drawing.add_node(key, names[key])
    ends = [k for k in drawing.names if k not in seeds]
    _connect(drawing, edges, names, cited, ((a, b) for a in seeds for b in ends))


def _connect(drawing: _Drawing, edges: Sequence[Edge], names: dict[str, str],
             cited: frozenset[str], pairs: Iterable[tuple[str, str]]) -> None:
    """The shortest labelled path of each pair not yet joined by one edge, while it fits."""
    for a, b in pairs:
        joined = any({x, y} == {a, b} for x, _, y in drawing.edges)
        path = None if joined else _shortest(edges, a, b)
        if path:
            drawing.add_edges(path, names, cited)


def _grow(drawing: _Drawing, edges: Sequence[Edge], names: dict[str, str]) -> None:
    """Add the best-ranked facts touching the drawing (the best fact when it is empty)
    until nothing more fits or connects."""
    left = list(edges)
    grown = True
    while grown and left:
        grown = False
        for edge in list(left):
            if not drawing.names or edge[0] in drawing.names or edge[1] in drawing.names:
                left.remove(edge)
                if drawing.add_edges([edge], names):
                    grown = True
                    break


def _render(drawing: _Drawing, roles: dict[str, set[str | None]],
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
