"""Which entities an answer's diagram is about (graph_flows.query.mermaid draws them): the
ones the question names, the answer's own, and the bridges a follow-up round found.

Nodes are keyed by entity id; a name with no entity (an answer or a bridge no stored entity
is named as) gets a key of its own (``answer:``, ``bridge:<name>``) and is drawn by that
name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from graph_flows.query.extractive import Question, terms
from graph_flows.shared.fragments import FUNCTION_WORDS, is_fragment, unbalanced

_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
_PAIRED = re.compile(r"[()\[\]{}\"“”]")
MAX_ASKED = 3  # entities the question names drawn at most (the most specific first)
MAX_BRIDGES = 2  # one per hop-1 passage (graph_flows.query.hop_one.MAX_HOPS)
MAX_STATED = 2  # what the supporting sentences state (an extractive answer shows two)
ANSWER = "answer:"


def node_key(name: str) -> str:
    """A name with case, punctuation and spacing folded (to tell alike names apart)."""
    return " ".join(_NOT_WORD.sub(" ", str(name).casefold()).split()) or str(name)



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
    for stem in sorted(s for s in question.names - covered if len(s) > 1):  # not "s" of "'s"
        heads = [k for k, name in names.items()
                 if words[k] and _last_term(name) == stem and k not in kept]
        if heads:
            kept.append(min(heads, key=lambda k: len(words[k])))
    return kept[:MAX_ASKED]


def _last_term(name: str) -> str:
    """The stem of a name's last content word ("" when none): of its last run of letters
    or digits, so "U.S." gives one stem, not either of two."""
    tail = [t for w in _NOT_WORD.split(name) if (t := terms(w))]
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
    possessive ("Hall's" -> "Hall"), and cut before a bracket or quote it opens or closes
    without its pair ("the Opposition (Jamaica" -> "Opposition": the mention was cut
    inside a parenthesis)."""
    words = str(text).split()
    while words and words[0].islower() and words[0] in FUNCTION_WORDS:
        words = words[1:]
    flat = re.sub(r"(?<=\w)['’]s$", "", " ".join(words))
    flat = re.sub(r"(?<=s)['’]$", "", flat)
    if unbalanced(flat):
        cut = _PAIRED.split(flat, maxsplit=1)[0].strip(" ,;:-")
        flat = cut or _PAIRED.sub("", flat).strip()
    return flat


def answer_node(names: dict[str, str], answer: str, said: Sequence[dict[str, Any]],
                 ) -> str | None:
    """The key of the answer's node, added to ``names`` when no entity has the mention's
    name (then labelled by the mention, as the answer writes it); None without one."""
    mention = clean_mention(answer)
    if not mention:
        return None
    ends = [f.get(f"{end}_id") for f in said for end in ("subject", "object")]
    key = answer_key(names, mention, [k for k in ends if k in names])
    if key is None:
        key = ANSWER
    if key == ANSWER or node_key(names[key]) != node_key(mention):
        names[key] = mention  # the entity as the answer names it ("Hall", not "Hall Hall")
    return key


def stated_keys(names: dict[str, str], stated: Sequence[str],
                taken: Iterable[str | None] = ()) -> list[str]:
    """The keys of what the answer's other sentences state (each sentence's candidate:
    :func:`graph_flows.query.answer_diagram.answer_mentions`): the entity of the same name
    (folded), else a key ``stated:<name>`` drawn by the mention (not a shorter name inside
    it: "Kim" is not "Kim Jong-suk"); none that is a fragment (a bare number, a
    possessive) or ``taken`` (the answer's, the question's, a bridge's); at most
    :data:`MAX_STATED`."""
    out: list[str] = []
    skip = set(taken)
    for mention in (clean_mention(m) for m in stated):
        if not mention or is_fragment(mention):
            continue
        wanted = node_key(mention)
        key = next((k for k, n in names.items() if node_key(n) == wanted), None)
        if key is None:
            key = f"stated:{wanted}"
            names[key] = mention
        if key not in skip and key not in out:
            out.append(key)
    return out[:MAX_STATED]


def bridge_keys(names: dict[str, str], bridges: Sequence[str],
                taken: Iterable[str | None] = ()) -> list[str]:
    """The keys of the bridge entities named ``bridges`` (the same name folded; one not
    among ``names`` is added as ``bridge:<name>``), other than ``taken`` (the answer's),
    at most :data:`MAX_BRIDGES`."""
    out: list[str] = []
    skip = set(taken)
    for bridge in dict.fromkeys(b for b in bridges if b and b.strip()):
        wanted = node_key(bridge)
        key = next((k for k, n in names.items() if node_key(n) == wanted), None)
        if key is None:
            key = f"bridge:{wanted}"
            names[key] = " ".join(bridge.split())
        if key not in skip and key not in out:
            out.append(key)
    return out[:MAX_BRIDGES]
