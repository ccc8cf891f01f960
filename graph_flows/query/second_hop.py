"""The no-LLM follow-up round from hop-1 passages (issue 41): for each hop-1 passage
(graph_flows.query.hop_one), the bridge it introduces and the bridge's best passage, placed
right after that hop-1 passage.

The round reads only what it needs, in three small statements, two after another: the
entities the hop-1 chunks mention with each one's passages nearest the question (exact
cosine over its own provenance, a few each, outside the hop-1 documents:
storage.bridge_reads.mentioned_with_chunks), then the passages about the chosen bridges
(below) and, beside them on a connection of their own, the facts the passages the round may
place state about the bridges (cut to those placed once known). The candidates are scored
by their link to the question's relation (:func:`graph_flows.query.hop_one.candidates`):
the sentences of a hop-1 passage that say a relation word are parsed in one batch while
the first statement runs, before the mentions are known. Round 1's vector of the question
is reused (``question_vector``).

A candidate's score is its ``link`` (0..1) plus how well its best passage matches the
question (its cosine, min-max scaled over the hop's candidates to 0..1): two kinds of
evidence weighed alike, as passage_order weighs the graph and the question match. A
candidate without a passage outside the hop-1 documents cannot lead anywhere and is
dropped. Why it should hold elsewhere: the next hop's passage is one that mentions the
bridge and says what the question asks about it, which is what the question's vector
matches; the link tells apart two candidates whose passages match alike.

The passage placed is the chosen bridge's best passage, or a passage about the bridge that
matches the question better: one that says its name in a document whose title says it too
("British Hong Kong" for Hong Kong, "Margraviate of Austria" for Austria), found by a
full-text phrase match (storage.bridges.titled_chunks), whatever the extractor stored for
it. Why: an extractor, an LLM's above all, stores a thing under the phrase each passage
uses ("2000 Hong Kong action film", "British Hong Kong"), so the bridge's own provenance
misses the passages about it; a title is what a reference text's passage is about, and its
saying the bridge's name is read from the text, not from an extraction. Only the chosen
bridge's passage changes, not the choice: passages that merely say a short name ("Friends",
"Exile") in another sense would lift the wrong candidates (measured: docs/bench/HISTORY.md,
issue 41, the replayed graph).

The choice is a guess between close candidates, so the round also hedges it in the tail
(loop.merge_hops: after the first loop.RULES_HEAD documents, where a passage can complete
the chain within ten without moving the head): the chosen bridge's own document (its title
is the bridge's name) when the placed passage is another, since an entity's own article is
where a reference corpus states its relations; and the runner-up candidate's best passage,
the likeliest other continuation. Measured in docs/bench/HISTORY.md (issue 41): AllSupp@10
up on both halves of MuSiQue, R@5 and MRR unchanged. Chaining one more hop from the bridge's
passage (its next bridge chosen the same way) was measured too: it brought no gold passage
that was not already in the top ten, so it is not done.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from graph_flows.query import confidence, extractive, hop_one, loop, scoring
from graph_flows.query.retrieval_base import _POOL, _with_retry
from graph_flows.shared.resources import get_resources
from graph_flows.shared.threads import ContextThreadPool
from graph_flows.shared.untrusted import guard_passage
from storage import bridge_reads, bridges
from storage.models import as_row

PER_ENTITY = 3  # passages read per candidate
FACTS = 10  # facts of the chosen passages about their bridges
# the question's vector is computed on a thread of its own while the round reads the hop-1
# passages' entities and parses their sentences (threads start on first use)
_EMBED = ContextThreadPool(max_workers=2, thread_name_prefix="krag-hop-embed")


@dataclass
class Followed:
    """What the round found: per hop-1 passage its record (shown in ``rounds``) and the
    placement (hop-1 chunk id, the bridge's passage row), the facts and entity rows."""

    hops: list[dict[str, Any]] = field(default_factory=list)
    places: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    tail: list[dict[str, Any]] = field(default_factory=list)
    """The hedges' passages, placed at the start of the ranking's tail (module docstring)."""
    facts: list[dict[str, Any]] = field(default_factory=list)
    entities: list[dict[str, Any]] = field(default_factory=list)
    ms: float = 0.0


def find(conn: Any, scope: Sequence[str], query: str, names: Sequence[str],
         hops: Sequence[hop_one.HopOne],
         embed: Callable[[], Sequence[float]] | Sequence[float],
         as_of: Any = None, engine: Any = None) -> Followed:
    """The bridge of each hop-1 passage in ``hops`` and its best passage (module
    docstring); ``embed`` is the question's vector (round 1's) or gives it. ``engine``: the
    pool on which the facts of the passages the round may place are read beside the titled
    passages (None: after them, on ``conn``)."""
    start = time.perf_counter()
    vector = _EMBED.submit(embed) if callable(embed) else _done(embed)  # beside the parse
    q = extractive.question(query, names)
    relation = confidence.relation_words(q)
    # the sentences saying a relation word are parsed (CPU) on a thread of their own while
    # the first statement reads the entities the hop-1 chunks mention and their passages
    # (one task for all hop-1 passages: a hand-over to a thread costs more than a call)
    parsing = _EMBED.submit(_parse_all, [str(h.passage.get("text") or "") for h in hops],
                            relation)
    skip = [str(h.passage.get("document_id")) for h in hops if h.passage.get("document_id")]
    mentioned, near = bridge_reads.mentioned_with_chunks(
        conn, scope, [h.passage["id"] for h in hops], vector.result(), skip, PER_ENTITY)
    found = [hop_one.linked(h, hop_one.mentions(
        h, [as_row(e) for e in mentioned[h.passage["id"]]], q), relation, parsed=p)
        for h, p in zip(hops, parsing.result(), strict=True)]
    kept = {c.id for cands in found for c in cands}
    near = [h for h in near if h.entity_id in kept]  # the rows bridge_chunks reads
    choices = [choose(cands, near) for cands in found]
    picked = [(c[0].id, c[0].name) for c in choices if c is not None]
    # on the search pool, as every search statement (not behind other requests' parses)
    facts_job = None if engine is None or not picked else _POOL.submit(
        _read_facts, engine, scope, _may_place(choices, found, near),
        [i for i, _ in picked], as_of)
    about = bridges.titled_chunks(conn, scope, picked, vector.result(), skip, PER_ENTITY) \
        if picked else []
    out = Followed()
    rows = {e.id: e for es in mentioned.values() for e in es}
    for hop, cands, chosen in zip(hops, found, choices, strict=True):
        chosen = None if chosen is None else placed(chosen, about)
        record = {"passage": hop.passage.get("title") or "", "uri": hop.passage.get("uri"),
                  "belongs": hop.by, "bridge": "", "why": "no candidate with a passage "
                  "outside the hop-1 passages", "document": ""}
        if chosen is not None:
            cand, hit, why = chosen
            record |= {"bridge": cand.name, "why": why, "document": hit.row.get("title")}
            out.places.append((str(hop.passage["id"]), passage_row(hit)))
            out.entities.append(_entity_row(rows[cand.id]))
            record["tail"] = _hedge(cand, hit, cands, near, out)
        out.hops.append(record)
    out.facts = _facts(conn, scope, out, facts_job, as_of)
    out.ms = round((time.perf_counter() - start) * 1000, 2)
    return out


def _parse_all(texts: Sequence[str], relation: frozenset[str]) -> list[dict[int, Any]]:
    """:func:`hop_one.parse` of each text, in order."""
    return [hop_one.parse(text, relation) for text in texts]


def _done(value: Any) -> Future[Any]:
    """A future already holding ``value``."""
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def _may_place(choices: Sequence[tuple[hop_one.Candidate, bridges.BridgeChunk, str] | None],
               found: Sequence[Sequence[hop_one.Candidate]],
               near: Sequence[bridges.BridgeChunk]) -> list[str]:
    """The chunks the round places unless a titled passage replaces one (:func:`placed`):
    each chosen bridge's best passage, its own document's and the runner-up's
    (:func:`_hedge`)."""
    out: list[str] = []
    for chosen, cands in zip(choices, found, strict=True):
        if chosen is None:
            continue
        cand, hit, _ = chosen
        own = next((h for h in near if h.entity_id == cand.id and h.own), None)
        runner = choose([c for c in cands if c.id != cand.id], near)
        out += [hit.row["id"], *([own.row["id"]] if own else []),
                *([runner[1].row["id"]] if runner else [])]
    return list(dict.fromkeys(out))


def _read_facts(engine: Any, scope: Sequence[str], chunks: list[str], ids: list[str],
                as_of: Any) -> tuple[list[str], list[tuple[str, bridges.ChunkFact]]]:
    """``chunks`` and the rows of their facts about ``ids`` (on a connection of its own)."""
    return chunks, _with_retry(engine, bridge_reads.chunk_fact_rows, (scope, chunks, ids, as_of))


def _facts(conn: Any, scope: Sequence[str], out: Followed,
           job: Future[tuple[list[str], list[tuple[str, bridges.ChunkFact]]]] | None,
           as_of: Any) -> list[dict[str, Any]]:
    """The facts the placed and hedged passages state about their bridges (at most
    :data:`FACTS`, as storage.bridges.chunk_facts gives them): from ``job``'s rows (read
    beside the titled passages, for the chunks the round may place) and, for a titled
    passage placed instead, read now."""
    chunks = [row["id"] for _, row in out.places] + [row["id"] for row in out.tail]
    ids = [e["id"] for e in out.entities]
    if job is None:
        return [fact_row(f) for f in bridges.chunk_facts(conn, scope, chunks, ids, FACTS,
                                                         as_of)]
    asked, rows = job.result()
    missing = [c for c in chunks if c not in set(asked)]
    if missing:
        rows = sorted([*rows, *bridge_reads.chunk_fact_rows(conn, scope, missing, ids, as_of)],
                      key=lambda r: (-float(r[1].fact.confidence or 0), r[1].fact.id, r[0]))
    return [fact_row(f) for f in bridge_reads.cut_facts(rows, chunks, ids, FACTS)]


def _hedge(cand: hop_one.Candidate, hit: bridges.BridgeChunk,
           cands: Sequence[hop_one.Candidate], near: Sequence[bridges.BridgeChunk],
           out: Followed) -> list[str]:
    """The tail's hedges of a chosen bridge (module docstring), added to ``out.tail``: the
    bridge's own document when its placed passage is another, and the best passage of the
    runner-up candidate; their titles."""
    own = next((h for h in near if h.entity_id == cand.id and h.own), None)
    hedges = [own] if own is not None and own.row["id"] != hit.row["id"] else []
    runner = choose([c for c in cands if c.id != cand.id], near)
    if runner is not None:
        hedges.append(runner[1])
    out.tail += [passage_row(h) for h in hedges]
    return [str(h.row.get("title") or "") for h in hedges]


def passage_row(hit: bridges.BridgeChunk) -> dict[str, Any]:
    """A bridge passage's row as the evidence holds it."""
    return guard_passage({**hit.row, "score": round(hit.similarity, 6), "methods": ["bridge"]})


def choose(cands: Sequence[hop_one.Candidate], near: Sequence[bridges.BridgeChunk],
           ) -> tuple[hop_one.Candidate, bridges.BridgeChunk, str] | None:
    """The candidate with the best link + scaled match and its best passage, and why (None:
    no candidate has a passage)."""
    best: dict[str, bridges.BridgeChunk] = {}
    for hit in near:
        if hit.entity_id not in best or hit.similarity > best[hit.entity_id].similarity:
            best[hit.entity_id] = hit
    usable = [c for c in cands if c.id in best]
    if not usable:
        return None
    match = _scaled({c.id: best[c.id].similarity for c in usable})
    pick = max(usable, key=lambda c: c.link + match[c.id])  # ties: the first (best link)
    hit = best[pick.id]
    why = (f"{pick.why}; its passage “{hit.row.get('title')}” matches the question at "
           f"{hit.similarity:.2f} (best of {len(usable)} candidate"
           f"{'s' if len(usable) > 1 else ''})")
    return pick, hit, why


def placed(chosen: tuple[hop_one.Candidate, bridges.BridgeChunk, str],
           about: Sequence[bridges.BridgeChunk],
           ) -> tuple[hop_one.Candidate, bridges.BridgeChunk, str]:
    """``chosen`` (a candidate, its best passage, why) with the passage to place: its best
    passage, or a passage about it (``about``: its document's title says the candidate's
    name) that matches the question better (module docstring)."""
    cand, hit, why = chosen
    best = max((h for h in about if h.entity_id == cand.id), default=None,
               key=lambda h: h.similarity)
    if best is None or best.similarity <= hit.similarity:
        return chosen
    return cand, best, (f"{why}; “{best.row.get('title')}”, whose title names it, matches "
                        f"at {best.similarity:.2f}: placed instead")


def _scaled(values: Mapping[str, float]) -> dict[str, float]:
    """``values`` min-max scaled to 0..1 (all 1.0 when equal)."""
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {k: 1.0 if span <= 0 else (v - low) / span for k, v in values.items()}


def _entity_row(entity: Any) -> dict[str, Any]:
    return {**as_row(entity), "methods": ["bridge"], "score": 0, "similarity": 0.0,
            "name_match": False, "summary_match": False,
            "agreement": scoring.agreement(["bridge"])}


def fact_row(found: bridges.ChunkFact) -> dict[str, Any]:
    return {**as_row(found.fact), "methods": ["bridge"], "text_match": False,
            "similarity": 0.0, "hop": None, "score": 0,
            "agreement": scoring.agreement(["bridge"]), "sources": found.sources,
            "subject": found.subject, "object": found.object}


def hops_of(state: Mapping[str, Any], follow: Mapping[str, Any]) -> list[hop_one.HopOne]:
    """The hop-1 passages a follow-up names (``follow["hops"]``: chunk id, name, how it
    belongs), read back from the evidence's passages."""
    rows = {p["id"]: p for p in state.get("passages") or []}
    return [hop_one.HopOne(rows[h["id"]], h["name"], h["by"])
            for h in follow.get("hops") or [] if h["id"] in rows]


def run_round(state: Mapping[str, Any], follow: Mapping[str, Any], names: Sequence[str],
              as_of: Any = None) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]]:
    """The follow-up round of ``follow`` on ``state``: the merged state keys, the counts
    added and the round record's own keys (``hops``, ``bridge``, ``query``, ``ms``)."""
    start = time.perf_counter()
    res = get_resources()
    scope = (state.get("search_metrics") or {}).get("scopes") or [state["scope"]]
    vector = state.get("question_vector")  # round 1 embedded the same question

    def embed() -> Sequence[float]:
        return res.embeddings.embed_query(state["query"])

    # the search pool (statement timeout, no ping on checkout: a dropped connection is
    # replaced once, as every search statement's)
    engine = res.store.search_engine(int(res.settings.search_timeout_s * 1000))
    hops = hops_of(state, follow)
    found = _with_retry(engine, lambda conn: find(conn, scope, state["query"], names, hops,
                                                  vector or embed, as_of, engine), ())
    merged, added = loop.merge_hops(dict(state), found.places, found.facts, found.entities,
                                    found.tail)
    words = " ".join(follow.get("uncovered") or ())
    chosen = [h["bridge"] for h in found.hops if h["bridge"]]
    record = {"hops": found.hops, "bridge": "; ".join(chosen),
              "ms": round((time.perf_counter() - start) * 1000, 2),
              "query": "; ".join(f"{b} {words}".strip() for b in chosen) or follow["query"]}
    return merged, added, record
