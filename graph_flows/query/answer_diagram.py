"""The diagram of an answer: what the answer states, drawn from the answer.

Its parts (drawn by :func:`graph_flows.query.mermaid.build_mermaid`):

- the answer's own entity: the mention :mod:`graph_flows.query.confidence` reads as the
  answer's candidate (the first mention of the kind the question asks for that the
  question does not hold), or the mention a later sentence reaches past a bridge
  (:func:`~graph_flows.query.confidence.chain`) when there is one;
- what each other sentence the answer cites states: its own candidate, read by the same
  rule on that sentence alone (:func:`answer_mentions`), so the hop a supporting sentence
  adds (bridge -> its object) is drawn, not only the lead sentence's;
- the facts behind the sentences the answer cites: the facts it cites (``[Fn]``), the
  retrieved facts whose sentence an extractive answer quotes, and the facts extracted from
  the passages it cites (``[Pn]``) whose sentence it quotes or whose two entities it names
  (:func:`cited_passage_facts`, read from the store: a passage's facts need not be among
  those retrieved);
- the entities the question names and the shortest labelled paths between all of these.

No diagram at all when the answer's confidence is ``none``: nothing relevant was found, and
a drawing of what was found would explain nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graph_flows.query import (
    answer,
    answer_kind,
    answer_slot,
    answer_span,
    asked_relation,
    confidence,
    extractive,
)
from graph_flows.query.mermaid import MAX_NODES, build_mermaid, edge_label
from storage import search

MAX_PASSAGE_FACTS = 200  # facts read from the cited passages at most


def answer_mention(query: str, text: str, q: extractive.Question) -> str:
    """The mention the answer states as its answer ("" when none): :func:`answer_mentions`."""
    return answer_mentions(query, text, q)[0]


def answer_mentions(query: str, text: str, q: extractive.Question) -> tuple[str, list[str]]:
    """(the answer's mention, what each answer sentence states). The first is the mention
    the answer states as its answer ("" when none), as the confidence label reads it
    (:func:`confidence.located`, a sentence whose asked place holds a pronoun skipped:
    :mod:`answer_slot`): when the question nests a relation outside its main clause, the
    one a later sentence reaches past a bridge, else the candidate of the asked kind. The
    second holds each answer sentence's own candidate (the same rule read on that sentence
    alone, over whole names: :func:`answer_span.sentence_mentions`), in order, other than
    the first, and none that repeats a word of a name the question asks about
    (:func:`confidence.repeats`: that is the asked thing under a fuller name, not what the
    sentence adds): what every cited sentence adds to the chain, so a diagram draws the
    answer a later supporting sentence states even when the lead sentence's candidate is
    another (the answer text is the same; only the drawing reads every sentence it cites).
    Both read the mentions a diagram can draw, in the order :mod:`answer_span` gives."""
    said = answer_span.said_sentences(text)
    if not said:
        return "", []
    qdoc, *docs = answer_kind.parse([query, *said])
    kind = answer_kind.asked_kind(query)
    ents, whole = answer_span.both_mentions(said, docs, kind, q)
    slot = answer_slot.asked_slot(query, qdoc)
    filled = [answer_slot.fill(slot, s, d) for s, d in zip(said, docs, strict=True)]
    is_new = answer_span.fresh(q)
    found = confidence.located(said, kind, q, ents, filled, is_new)[1].text
    asked = confidence.relation_words(q)
    if len(asked_relation.main_relation(query, asked, qdoc)) < len(asked):  # nested
        found = confidence.chained(said, kind, q, ents, filled, is_new)[1].text or found
    each = [confidence.located([s], kind, q, whole, [f], is_new)[1].text
            for s, f in zip(said, filled, strict=True)]
    return found, [m for m in dict.fromkeys(each)
                   if m and m != found and not confidence.repeats(m, q)]


def hop_links(rounds: Sequence[dict[str, Any]], passages: Sequence[dict[str, Any]],
              ) -> tuple[list[str], list[str]]:
    """(bridges, their sentences): the bridge each follow-up round found from a hop-1
    passage (``rounds[i]["hops"]``, graph_flows.query.second_hop), and the sentences of
    those hop-1 passages (among ``passages``) that name it: where the link question entity
    -> bridge is said."""
    bridges: list[str] = []
    said: list[str] = []
    for hop in (h for r in rounds for h in r.get("hops") or []):
        bridge = str(hop.get("bridge") or "")
        if not bridge:
            continue
        bridges.append(bridge)
        for p in passages:
            if (p.get("title") or "") == hop.get("passage") and p.get("uri") == hop.get("uri"):
                said += [s for s in extractive.sentences(str(p.get("text") or ""))
                         if bridge.casefold() in s.casefold()]
    return list(dict.fromkeys(bridges)), list(dict.fromkeys(said))


def _flat(text: str) -> str:
    return " ".join(str(text).split())


def cited_fact_ids(text: str, mode: str, cited: Sequence[dict[str, Any]],
                   facts: Sequence[dict[str, Any]]) -> list[str]:
    """Facts the answer cites and, for an extractive answer, those whose sentence it quotes
    (from a cited passage)."""
    ids = [c["fact_id"] for c in cited if "fact_id" in c]
    if mode == "extractive":
        said = _flat(text)
        ids += [f["id"] for f in facts if _flat(f["fact"]) in said]
    return list(dict.fromkeys(ids))


def cited_passage_facts(conn: Any, scope: Any, text: str, cited: Sequence[dict[str, Any]],
                        as_of: Any = None, known: Mapping[str, str] | None = None,
                        ) -> list[dict[str, Any]]:
    """The facts extracted from the passages the answer cites whose sentence the answer
    quotes or whose two entities it names, as retrieved facts are shaped (with ``subject``
    and ``object`` names), in the order the answer cites their passages. ``known``: names
    of entities this request already read from the store in ``scope`` (id -> name,
    :func:`known_names`); only the others are read again."""
    chunks = [c["passage_id"] for c in cited if "passage_id" in c]
    found = search.facts_of_chunks(conn, scope, chunks, MAX_PASSAGE_FACTS, as_of)
    known = known or {}
    ends = {i for f in found for i in (f.subject_id, f.object_id)}
    names = {i: known[i] for i in ends if i in known}
    names |= {e.id: e.name for e in search.entities_by_ids(
        conn, scope, [i for i in ends if i not in known])}
    said, lowered = _flat(text), _flat(text).casefold()
    out = []
    for f in found:
        subject, obj = names.get(f.subject_id), names.get(f.object_id)
        if subject is None or obj is None:
            continue
        named = subject.casefold() in lowered and obj.casefold() in lowered
        if named or _flat(f.fact) in said:
            out.append({"id": f.id, "subject_id": f.subject_id, "object_id": f.object_id,
                        "predicate": f.predicate, "predicate_text": f.predicate_text,
                        "fact": f.fact, "subject": subject, "object": obj})
    return out


def known_names(entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]],
                ) -> dict[str, str]:
    """Entity id -> name of the entities and fact ends retrieved (as the store names them:
    retrieval read them in the same scopes), so :func:`cited_passage_facts` reads only the
    names it does not hold (checked: 6,188 ids of 200 MuSiQue queries, every name the
    store's)."""
    names = {e["id"]: e["name"] for e in entities if e.get("id") and e.get("name")}
    for f in facts:
        for end in ("subject", "object"):
            if f.get(f"{end}_id") and f.get(end):
                names.setdefault(f[f"{end}_id"], f[end])
    return names


def answer_diagram(query: str, q: extractive.Question, text: str, mode: str, label: str,
                   cited: Sequence[dict[str, Any]], entities: Sequence[dict[str, Any]],
                   facts: Sequence[dict[str, Any]], passage_facts: Sequence[dict[str, Any]],
                   max_nodes: int, rounds: Sequence[dict[str, Any]] = (),
                   passages: Sequence[dict[str, Any]] = ()) -> str:
    """The Mermaid diagram of answer ``text`` (see the module docstring); "" when its
    confidence ``label`` is ``none``. ``rounds`` and ``passages`` give the bridges a
    follow-up found and their hop-1 passages (:func:`hop_links`)."""
    if label == "none":
        return ""
    known = {f["id"] for f in facts}
    pool = [*facts, *(f for f in passage_facts if f["id"] not in known)]
    ids = set(cited_fact_ids(text, mode, cited, facts)) | {f["id"] for f in passage_facts}
    said, lowered = _flat(text), _flat(text).casefold()
    order = sorted((f for f in pool if f["id"] in ids),
                   key=lambda f: _reading_order(said, lowered, f))
    bridges, hop_said = hop_links(rounds, passages)
    found, stated = answer_mentions(query, text, q)
    return build_mermaid(entities, pool, max_nodes, question=q,
                         cited=list(dict.fromkeys(f["id"] for f in order)),
                         answer=found, bridges=bridges, stated=stated,
                         sentences=answer_span.said_sentences(text), context=hop_said)


def reading_order(text: str, fact: dict[str, Any]) -> tuple[int, int, int]:
    """Where the answer says ``fact``: its sentence's place in the answer (the lead sentence
    first; a fact not quoted by where its entities are named), labelled facts before
    co-occurrences, then where the later of its two entities is named (so the entities
    come in the order a reader meets them)."""
    return _reading_order(_flat(text), _flat(text).casefold(), fact)


def _reading_order(said: str, lowered: str, fact: dict[str, Any]) -> tuple[int, int, int]:
    """:func:`reading_order` on the answer's text already flattened (``said``) and
    case-folded (``lowered``): read once for all the facts sorted."""
    at = said.find(_flat(fact.get("fact", "")))
    names = [p for k in ("subject", "object")
             if (p := lowered.find(str(fact.get(k, "")).casefold(), max(at, 0))) >= 0]
    last = max(names, default=len(lowered))
    return (at if at >= 0 else last, 0 if edge_label(fact) else 1, last)


def context_diagram(conn: Any, scope: Any, query: str, names: Sequence[str], text: str,
                    label: str, entities: Sequence[dict[str, Any]],
                    facts: Sequence[dict[str, Any]], passages: Sequence[dict[str, Any]],
                    max_nodes: int = MAX_NODES, rounds: Sequence[dict[str, Any]] = ()) -> str:
    """:func:`answer_diagram` of the extractive answer ``text`` from labelled ``facts`` and
    ``passages`` (what MCP ``kag_query`` returns) and the loop's ``rounds``, reading the
    cited passages' facts on ``conn``; "" when ``label`` is ``none``."""
    if label == "none":
        return ""
    cited, _ = answer.citations(text, facts, passages)
    extra = cited_passage_facts(conn, scope, text, cited, known=known_names(entities, facts))
    return answer_diagram(query, extractive.question(query, names), text, "extractive",
                          label, cited, entities, facts, extra, max_nodes, rounds, passages)
