"""The paths of an answer's diagram (graph_flows.query.mermaid draws them): the nodes and
edges drawn so far within a node budget, the shortest labelled paths between the chain's
nodes, the facts the answer says, and the links of the chain question entity -> bridge ->
answer that no fact joins, read from the sentence that names both
(graph_flows.query.sentence_link).

Every edge carries a relation text: a fact's own (``predicate_text``, else its relation
type), or the words a sentence puts between two names. A fact with only the generic
``relates_to`` (a co-occurrence) is never an edge.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from graph_flows.query import sentence_link

GENERIC = "relates_to"
MAX_PATH = 3  # facts in a connecting path at most
Edge = tuple[str, str, dict[str, Any]]


def edge_label(fact: dict[str, Any]) -> str:
    """The fact's own predicate text, else its relation type; "" for the generic one."""
    label = " ".join(str(fact.get("predicate_text") or fact.get("predicate") or "").split())
    return "" if label in ("", GENERIC) else label


@dataclass
class Drawing:
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


def shortest(edges: Sequence[Edge], start: str, goal: str) -> list[Edge] | None:
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


def chain(drawing: Drawing, edges: Sequence[Edge], names: dict[str, str],
           said: Sequence[dict[str, Any]], shown: set[str], then: Sequence[str] = ()) -> None:
    """The shortest labelled paths between the nodes drawn (the answer and the question's
    entities), then the nodes ``then`` (what the answer's other sentences state), then the
    facts the answer says, those touching a node drawn so far first (:func:`hops_first`),
    each group in its order: a labelled fact as its edge,
    a co-occurrence as the edge its sentence states (:func:`said_edge`), else as its two
    entities, unconnected; then the shortest labelled paths from the answer and the
    question's entities to those; each while it fits."""
    cited = frozenset(f.get("id") for f in said)
    seeds = list(drawing.names)
    _connect(drawing, edges, names, cited, combinations(seeds, 2))
    for key in then:
        drawing.add_node(key, names[key])
    labelled = {e[2].get("id"): e for e in edges}
    for fact in hops_first(said, seeds):
        if fact.get("id") in labelled:
            drawing.add_edges([labelled[fact["id"]]], names, cited)
            continue
        read = said_edge(fact, names, shown)
        if read is not None and drawing.add_edges([read], names, cited):
            continue
        for key in (fact.get("subject_id"), fact.get("object_id")):
            if key in shown:
                drawing.add_node(key, names[key])
    ends = [k for k in drawing.names if k not in seeds]
    _connect(drawing, edges, names, cited, ((a, b) for a in seeds for b in ends))


def hops_first(said: Sequence[dict[str, Any]], chain_keys: Sequence[str],
               ) -> list[dict[str, Any]]:
    """The facts the answer says, those that touch a node of the chain (the answer, the
    question's entities, a bridge) first, each group in the answer's order."""
    on = set(chain_keys)
    return sorted(said, key=lambda f: not ({f.get("subject_id"), f.get("object_id")} & on))


def said_edge(fact: dict[str, Any], names: dict[str, str], shown: set[str]) -> Edge | None:
    """A co-occurrence fact (two entities named in one sentence, no relation text) as the
    edge its sentence states between them (:func:`sentence_link.link`), in reading order;
    None when the sentence relates them by no words of its own."""
    a, b = fact.get("subject_id"), fact.get("object_id")
    if a == b or a not in shown or b not in shown:
        return None
    found = sentence_link.link(str(fact.get("fact") or ""), names[a], names[b])
    if found is None:
        return None
    first, second = (a, b) if found.first == names[a] else (b, a)
    return first, second, {**fact, "predicate_text": found.text}


@dataclass(frozen=True)
class Ends:
    """The links of an answer's chain: the question's entities, the bridges, the answer."""

    asked: Sequence[str]
    bridges: Sequence[str]
    answer: str | None
    stated: Sequence[str] = ()
    """What the answer's other sentences state (each sentence's candidate)."""


def link_chain(drawing: Drawing, names: dict[str, str], ends: Ends,
                sentences: Sequence[str], context: Sequence[str]) -> None:
    """Join the chain question entity -> bridge -> answer where no drawn fact does: each
    bridge not yet joined to a question entity, then the answer not yet joined to a bridge
    or a question entity (to another drawn node it is named beside, when it has no edge at
    all), by the relation a sentence states between them (:mod:`sentence_link`: the
    answer's ``sentences``, drawn as cited, then the ``context``). Only drawn nodes are
    joined: nothing is added."""
    for bridge in ends.bridges:
        if bridge in drawing.names and not _joined(drawing, bridge, ends.asked):
            _sentence_edge(drawing, names, [a for a in ends.asked if a in drawing.names],
                           bridge, sentences, context)
    for end in (ends.answer, *ends.stated):
        _link_end(drawing, names, ends, end, sentences, context)


def _link_end(drawing: Drawing, names: dict[str, str], ends: Ends, key: str | None,
              sentences: Sequence[str], context: Sequence[str]) -> None:
    """Join ``key`` (the answer, or what a supporting sentence states) to a bridge or a
    question entity by the relation a sentence states, else, when it has no edge at all,
    to another drawn node it is named beside (:func:`link_chain`)."""
    if key is None or key not in drawing.names:
        return
    anchors = [k for k in [*ends.bridges, *ends.asked] if k in drawing.names and k != key]
    if _joined(drawing, key, anchors) or _sentence_edge(
            drawing, names, anchors, key, sentences, context):
        return
    if not any(key in (a, b) for a, _, b in drawing.edges):
        others = [k for k in drawing.names if k != key and k not in anchors]
        _sentence_edge(drawing, names, others, key, sentences, ())


def _joined(drawing: Drawing, key: str, others: Sequence[str]) -> bool:
    """Whether drawn edges join ``key`` to one of ``others`` (in either direction)."""
    near: dict[str, set[str]] = {}
    for a, _, b in drawing.edges:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    seen, todo = {key}, [key]
    while todo:
        for there in near.get(todo.pop(), ()):
            if there not in seen:
                seen.add(there)
                todo.append(there)
    return any(k in seen for k in others if k != key)


def _sentence_edge(drawing: Drawing, names: dict[str, str], anchors: Sequence[str],
                   key: str, sentences: Sequence[str], context: Sequence[str]) -> bool:
    """The first of ``anchors`` a sentence relates to ``key``, drawn as an edge labelled
    with that relation in reading order (cited when the sentence is the answer's); False
    when no sentence relates any."""
    for source, cited in ((sentences, True), (context, False)):
        for anchor in anchors:
            found = sentence_link.first_link(source, names[anchor], names[key])
            if found is None:
                continue
            a, b = (anchor, key) if found.first == names[anchor] else (key, anchor)
            fact = {"id": f"sentence:{a}:{b}", "predicate_text": found.text,
                    "fact": found.sentence}
            ids = frozenset({fact["id"]}) if cited else frozenset()
            return drawing.add_edges([(a, b, fact)], names, ids)
    return False


def _connect(drawing: Drawing, edges: Sequence[Edge], names: dict[str, str],
             cited: frozenset[str], pairs: Iterable[tuple[str, str]]) -> None:
    """The shortest labelled path of each pair not yet joined by one edge, while it fits."""
    for a, b in pairs:
        joined = any({x, y} == {a, b} for x, _, y in drawing.edges)
        path = None if joined else shortest(edges, a, b)
        if path:
            drawing.add_edges(path, names, cited)


def grow(drawing: Drawing, edges: Sequence[Edge], names: dict[str, str]) -> None:
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


