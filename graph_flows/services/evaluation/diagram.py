"""The diagram measure of `krag eval multihop` (``"diagram"`` in its JSON report).

Each question's final ``mermaid`` (the query graph's own output) is parsed
(:func:`parse_mermaid`): node labels and edges with their labels, the ``#NN;`` / ``#name;``
entity escapes decoded. Over the questions:

- ``drawn``: questions with a diagram; ``nodes_p50`` / ``nodes_p95`` / ``nodes_max``: nodes
  per drawn diagram (percentiles linearly interpolated);
- ``edges``: edges over all diagrams; ``labelled_share``: those with a label (None when no
  edge was drawn);
- ``answer_shown_of``: questions whose answer text holds the gold answer or an alias (the
  text without the no-LLM answer's fixed header, :func:`answer_text`: its "No-LLM mode ...
  (no model wrote this)" is no answer, yet holds an alias "no" of Norway);
  ``answer_shown``: those of them whose diagram holds it in a node or edge label. "Holds" is
  :func:`holds`: case-insensitive, whitespace-folded, on word boundaries (an alias "it" is
  not found inside "Italy"), so ``answer_shown_of`` can be below Ans@answer's count, which
  matches substrings;
- ``question_entities_shown``: of the questions whose answer is not labelled ``none``, the
  share whose diagram draws a node the question names: a node label that, folded (case,
  punctuation, a leading "the"), occurs in the folded question on word boundaries;
- ``fragment_names_share``: node labels that are fragments
  (:func:`graph_flows.shared.fragments.is_fragment`, the gold answer and aliases allowed as
  bare numbers) over all node labels;
- ``none_answers`` / ``none_diagrams``: answers labelled ``none``, and diagrams drawn for
  them (the product draws none).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from graph_flows.query.answer import EXTRACTIVE_HEADER
from graph_flows.services.evaluation.metrics import percentile
from graph_flows.shared.fragments import is_fragment

_NODE = re.compile(r'^\s*([A-Za-z]\w*)\s*[\[\(\{>]+"(.*)"[\]\)\}]+\s*(?::::\w+)?\s*$')
_EDGE = re.compile(r'^\s*([A-Za-z]\w*)\s*(?:-->|---|-\.->|-\.-|==>|===|~~~)\s*'
                   r'(?:\|"?(.*?)"?\|)?\s*([A-Za-z]\w*)\s*$')
_ESCAPE = re.compile(r"#(\d+|[A-Za-z]+);")
_FOLD = re.compile(r"[\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Diagram:
    """A parsed Mermaid flowchart: node id -> label, edges (from, label or "", to)."""

    nodes: dict[str, str]
    edges: list[tuple[str, str, str]]

    def labels(self) -> list[str]:
        """Every node and edge label."""
        return [*self.nodes.values(), *(label for _, label, _ in self.edges if label)]


def decode(label: str) -> str:
    """A Mermaid label with its entity escapes (``#60;``, ``#quot;``) decoded."""
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code.isdigit():
            return chr(int(code)) if int(code) < 0x110000 else m.group()
        return html.unescape(f"&{code};")
    return _ESCAPE.sub(one, label)


def parse_mermaid(text: str) -> Diagram:
    """Nodes and edges of a flowchart as :mod:`graph_flows.query.mermaid` writes it (a
    node declared on its own line, an edge between two ids with an optional ``|label|``);
    header, style and comment lines are skipped."""
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str]] = []
    for line in str(text).splitlines():
        if m := _NODE.match(line):
            nodes.setdefault(m.group(1), decode(m.group(2)))
        elif (m := _EDGE.match(line)) and m.group(1) not in ("class", "classDef"):
            edges.append((m.group(1), decode(m.group(2) or "").strip(), m.group(3)))
    return Diagram(nodes, edges)


def fold(text: str) -> str:
    """Case, punctuation and spacing folded, a leading "the" dropped."""
    flat = " ".join(_FOLD.sub(" ", str(text).casefold()).split())
    return flat[4:] if flat.startswith("the ") else flat


def holds(text: str, answers: Sequence[str]) -> bool:
    """Whether ``text`` holds one of ``answers`` on word boundaries (folded)."""
    padded = f" {fold(text)} "
    return any((a := fold(answer)) and f" {a} " in padded for answer in answers)


def answer_text(result: dict[str, Any]) -> str:
    """The answer a query-graph result states, without the extractive answer's header."""
    return str(result.get("answer") or "").replace(EXTRACTIVE_HEADER, "")


@dataclass
class DiagramCounts:
    """Accumulates the diagram measure question by question (module docstring)."""

    nodes: list[int] = field(default_factory=list)
    edges: int = 0
    labelled: int = 0
    shown: int = 0
    shown_of: int = 0
    answered: int = 0
    asked_drawn: int = 0
    names: int = 0
    fragments: int = 0
    none_answers: int = 0
    none_diagrams: int = 0

    def add(self, question: str, result: dict[str, Any], answers: Sequence[str]) -> None:
        """Count one query-graph result to ``question`` with gold ``answers``."""
        source = str(result.get("mermaid") or "")
        diagram = parse_mermaid(source)
        drawn = bool(diagram.nodes)
        label = str((result.get("answer_confidence") or {}).get("label") or "none")
        if label == "none":
            self.none_answers += 1
            self.none_diagrams += drawn
        else:
            self.answered += 1
            asked = f" {fold(question)} "
            self.asked_drawn += any(
                (f := fold(n)) and f" {f} " in asked for n in diagram.nodes.values())
        if drawn:
            self.nodes.append(len(diagram.nodes))
        self.edges += len(diagram.edges)
        self.labelled += sum(1 for _, lab, _ in diagram.edges if lab)
        if holds(answer_text(result), answers):
            self.shown_of += 1
            self.shown += any(holds(lab, answers) for lab in diagram.labels())
        self.names += len(diagram.nodes)
        self.fragments += sum(is_fragment(n, answers) for n in diagram.nodes.values())

    def as_dict(self) -> dict[str, Any]:
        """The ``diagram`` block of the report."""
        return {
            "drawn": len(self.nodes),
            "nodes_p50": round(percentile(self.nodes, 50), 1),
            "nodes_p95": round(percentile(self.nodes, 95), 1),
            "nodes_max": max(self.nodes, default=0),
            "edges": self.edges,
            "labelled_share": round(self.labelled / self.edges, 4) if self.edges else None,
            "answer_shown": self.shown, "answer_shown_of": self.shown_of,
            "question_entities_shown": round(self.asked_drawn / self.answered, 4)
            if self.answered else None,
            "fragment_names_share": round(self.fragments / self.names, 4)
            if self.names else 0.0,
            "none_answers": self.none_answers, "none_diagrams": self.none_diagrams,
        }
