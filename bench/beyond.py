"""Before/after evidence for temporal facts, hierarchical scopes and multi-hop ranking.

Usage::

    python -m bench.beyond [--entities 10000 --relations 30000] [--reuse]
        [--only temporal,scopes,multihop] [--data-dir DIR | --database-url URL]

Loads (or reuses, ``--reuse``) the synthetic graph of :mod:`bench.synthetic` like
:mod:`bench.retrieval_latency`, then runs three experiments, each on its own copy of that
database (``CREATE DATABASE ... TEMPLATE``) so the loaded graph stays untouched:

* **temporal** -- 150 organisations of the graph get three successive CEOs (2016, 2019,
  2022), written as three rounds of documents: in date order, out of order (the 2016 report
  arrives last), or with the newest report undated. *Before*: the facts carry no attribute
  (every CEO stays valid, as before supersession existed). *After*: ``attribute="ceo"``.
  For "Who is the CEO of X?" (now, and as of 2020-06-01) it counts answers whose retrieved
  CEO facts are exactly the right one, stale facts returned, write and retrieval time. Both
  databases are written round by round and asked question by question, alternately.
* **scopes** -- platform (the loaded graph) > realm > team-a / team-b, with new entities and
  facts in realm, team-a and team-b. Questions asked from team-a name an entity of its own
  scope, of an ancestor or of the sibling team-b. *Before (isolated)*: flat scopes (no
  parents), *before (shared)*: everything in one scope, *after*: the hierarchy. Counts
  found / leaked and retrieval time; each question goes to the three layouts in turn.
* **multihop** -- two-hop questions built from the graph ("What does the technology that A
  uses contain?": the second fact names neither A nor a word of the question) and the
  standard query mix, for recipes split/rrf x max_hops 1/2/3, configurations interleaved
  per query. Counts first-hop / second-hop / both facts retrieved, entity target found,
  retrieval time, and which agreement labels the target facts got.

Query vectors come from a hash embedder: the synthetic graph's vectors are cluster noise, so
the vector lists carry no signal here and all recipes see the same vectors.
Writes ``docs/bench/beyond_<size>.json`` and prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench import synthetic
from bench.retrieval_latency import (
    EMBED_DIM,
    EMBED_MODEL,
    OUT_DIR,
    HashEmbedder,
    analysis_terms,
    bench_server,
    log,
    machine,
    pct,
    prepare_database,
    search_config,
    size_label,
    with_database,
)
from graph_flows.query import retrieval
from storage import KnowledgeStore, ids, scopes
from storage.models import DocumentIn, EntityIn, RelationIn

_EMB = HashEmbedder()
NOW_AS_OF = None
PAST_AS_OF = datetime(2020, 6, 1, tzinfo=UTC)
YEARS = (2016, 2019, 2022)


# -- shared ------------------------------------------------------------------------------------
def copy_database(server_url: str, src: str, dst: str) -> KnowledgeStore:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = %s AND pid <> pg_backend_pid()", (src,))
        admin.execute(f'DROP DATABASE IF EXISTS "{dst}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{dst}" TEMPLATE "{src}"')
    return KnowledgeStore.open(with_database(server_url, dst), embedding_model=EMBED_MODEL,
                               embedding_dim=EMBED_DIM)


def drop_database(server_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def ask(engine: Any, scope: str, question: str, cfg: retrieval.SearchConfig,
        as_of: Any = None) -> tuple[retrieval.Retrieved, float]:
    """What retrieve_knowledge does for ``question`` (heuristic analysis); (result, ms)."""
    terms, predicates = analysis_terms(question)
    t0 = time.perf_counter()
    found = retrieval.retrieve(engine, scope, terms, predicates, cfg,
                               lambda: _EMB.embed_query(question), as_of=as_of)
    return found, (time.perf_counter() - t0) * 1000


def _document(store: KnowledgeStore, scope: str, name: str, body: str) -> str:
    doc = DocumentIn(scope, name, f"{name}.md", ids.content_hash(body + scope))
    return store.sync_document(doc, [body]).new_chunk_ids[0]


def _rate(n: int, d: int) -> float:
    return round(100 * n / d, 1) if d else 0.0


# -- temporal ----------------------------------------------------------------------------------
def temporal_plan(graph: synthetic.SyntheticGraph, rng: random.Random, n: int
                  ) -> list[dict[str, Any]]:
    orgs = [e for e in graph.entities if e.type == "organization" and e.alias_of is None]
    people = [e for e in graph.entities if e.type == "person" and e.alias_of is None]
    plan = []
    for i, org in enumerate(rng.sample(orgs, n)):
        ceos = rng.sample(people, 3)
        style = ("in-order", "out-of-order", "newest-undated")[i % 3]
        facts = [{"person": p.name, "year": y, "dated": not (style == "newest-undated"
                                                             and y == YEARS[-1])}
                 for p, y in zip(ceos, YEARS, strict=True)]
        arrival = [facts[1], facts[2], facts[0]] if style == "out-of-order" else facts
        plan.append({"org": org.name, "style": style, "facts": facts, "arrival": arrival})
    return plan


def _ceo_sentence(f: dict[str, Any], org: str) -> str:
    if f["dated"]:
        return f"{f['person']} became CEO of {org} in {f['year']}."
    return f"{f['person']} is the CEO of {org}."


def write_round(store: KnowledgeStore, plan: list[dict[str, Any]], rnd: int,
                attribute: str | None) -> float:
    """Round ``rnd``: one document and fact per organisation; returns ms."""
    scope = synthetic.SCOPE
    t0 = time.perf_counter()
    for p in plan:
        f = p["arrival"][rnd]
        sentence = _ceo_sentence(f, p["org"])
        chunk = _document(store, scope, f"ceo-{rnd}-{p['org']}", sentence)
        org = EntityIn(p["org"], "organization", scope, chunk_ids=(chunk,))
        person = EntityIn(f["person"], "person", scope, chunk_ids=(chunk,))
        when = datetime(f["year"], 1, 1, tzinfo=UTC) if f["dated"] else None
        rel = RelationIn(org.id, "relates_to", person.id, sentence, scope, 0.9,
                         valid_at=when, chunk_ids=(chunk,), attribute=attribute)
        store.write_graph([org, person], [rel])
    return (time.perf_counter() - t0) * 1000


class _Tally:
    def __init__(self) -> None:
        self.found = self.exact = self.stale = 0
        self.ms: list[float] = []
        self.by_style: dict[str, list[int]] = {}

    def add(self, p: dict[str, Any], got: set[str], right: str, ms: float) -> None:
        ceo = {_ceo_sentence(f, p["org"]) for f in p["facts"]} & got
        self.ms.append(ms)
        self.found += right in got
        self.exact += ceo == {right}
        self.stale += bool(ceo - {right})
        self.by_style.setdefault(p["style"], []).append(int(ceo == {right}))

    def report(self, n: int) -> dict[str, Any]:
        return {"questions": n, "right_fact_found_pct": _rate(self.found, n),
                "exactly_right_pct": _rate(self.exact, n),
                "stale_returned_pct": _rate(self.stale, n), "retrieve_ms": pct(self.ms),
                "exactly_right_by_style_pct": {
                    k: _rate(sum(v), len(v)) for k, v in self.by_style.items()}}


def run_temporal(server_url: str, base: str, graph: synthetic.SyntheticGraph, n: int,
                 log: Callable[[str], None]) -> dict[str, Any]:
    """Both conditions built side by side, written and asked alternately (ratios in one run)."""
    plan = temporal_plan(graph, random.Random(7), n)
    report: dict[str, Any] = {"organisations": n, "styles": {
        s: sum(p["style"] == s for p in plan)
        for s in ("in-order", "out-of-order", "newest-undated")}}
    conds = {"before": None, "after": "ceo"}
    stores = {c: copy_database(server_url, base, f"{base}_temporal_{c}") for c in conds}
    try:
        write_ms = {c: 0.0 for c in conds}
        for rnd in range(3):
            for c, attribute in conds.items():
                write_ms[c] += write_round(stores[c], plan, rnd, attribute)
        engines = {c: st.search_engine(60_000) for c, st in stores.items()}
        cfg = search_config()
        for label, as_of, want in (("now", NOW_AS_OF, 2), ("as_of_2020", PAST_AS_OF, 1)):
            tally = {c: _Tally() for c in conds}
            for i, p in enumerate(plan):
                question = f"Who is the CEO of {p['org']}?"
                right = _ceo_sentence(p["facts"][want], p["org"])
                for c in (list(conds) if i % 2 == 0 else list(conds)[::-1]):
                    res, ms = ask(engines[c], synthetic.SCOPE, question, cfg, as_of)
                    tally[c].add(p, {f["fact"] for f in res.facts}, right, ms)
            for c in conds:
                report.setdefault(c, {})[label] = tally[c].report(len(plan))
        for c, st in stores.items():
            with st.connect() as conn:
                open_ = conn.execute(text(
                    "SELECT count(*) FROM relations WHERE fact LIKE '% CEO of %' "
                    "AND invalid_at IS NULL")).scalar()
            report[c].update(write_ms_per_fact=round(write_ms[c] / (3 * n), 2),
                             open_ceo_facts=open_)
            log(f"temporal {c}: {report[c]}")
    finally:
        for c, st in stores.items():
            st.close()
            drop_database(server_url, f"{base}_temporal_{c}")
    return report


# -- scopes ------------------------------------------------------------------------------------
TEAM_WORDS = ("Kestrel", "Marlin", "Osprey", "Heron", "Puffin", "Plover", "Tern", "Gannet")


def scope_plan(graph: synthetic.SyntheticGraph, rng: random.Random, n: int
               ) -> dict[str, list[str]]:
    """Entity names per scope: new ones for realm / team-a / team-b, loaded ones for platform."""
    made: set[str] = set()

    def names(prefix: str, k: int) -> list[str]:
        out = []
        while len(out) < k:
            name = f"{prefix} {rng.choice(TEAM_WORDS)} {synthetic._gen_word(rng).title()}"
            if name not in made:
                made.add(name)
                out.append(name)
        return out

    platform = [e.name for e in rng.sample(graph.entities, n) if e.alias_of is None]
    return {"platform": platform, "realm": names("Realm", n), "team-a": names("Alpha", n),
            "team-b": names("Bravo", n)}


def write_scope_entities(store: KnowledgeStore, names: list[str], scope: str, group: str
                         ) -> None:
    chunk = _document(store, scope, f"scope-{group}", " ".join(names))
    ents = [EntityIn(n, "technology", scope, f"{n} is a service of {scope}.", 0.9,
                     chunk_ids=(chunk,)) for n in names]
    rels = [RelationIn(a.id, "uses", b.id, f"{a.name} uses {b.name} for routing.", scope, 0.9,
                       chunk_ids=(chunk,)) for a, b in zip(ents, ents[1:], strict=False)]
    store.write_graph(ents, rels)


def run_scopes(server_url: str, base: str, graph: synthetic.SyntheticGraph, n: int,
               log: Callable[[str], None]) -> dict[str, Any]:
    """Three layouts built side by side; every question asked of all three in turn."""
    plan = scope_plan(graph, random.Random(11), n)
    platform = synthetic.SCOPE
    cfg = search_config()
    report: dict[str, Any] = {"entities_per_scope": n}
    layouts = {  # where each group's data is written, per condition
        "before_isolated": {"realm": "realm", "team-a": "team-a", "team-b": "team-b"},
        "before_shared": {"realm": platform, "team-a": platform, "team-b": platform},
        "after": {"realm": "realm", "team-a": "team-a", "team-b": "team-b"}}
    askers = {"before_isolated": "team-a", "before_shared": platform, "after": "team-a"}
    stores = {c: copy_database(server_url, base, f"{base}_scopes_{c}") for c in layouts}
    try:
        for cond, where in layouts.items():
            for group in ("realm", "team-a", "team-b"):
                write_scope_entities(stores[cond], plan[group], where[group], group)
        with stores["after"].transaction() as conn:
            scopes.set_parent(conn, "realm", platform)
            scopes.set_parent(conn, "team-a", "realm")
            scopes.set_parent(conn, "team-b", "realm")
        engines = {c: st.search_engine(60_000) for c, st in stores.items()}
        hits = {c: {g: 0 for g in plan} for c in layouts}
        lat: dict[str, list[float]] = {c: [] for c in layouts}
        order = list(layouts)
        i = 0
        for group in ("team-a", "realm", "platform", "team-b"):
            for entity in plan[group]:
                i += 1
                for c in order[i % 3:] + order[:i % 3]:
                    res, ms = ask(engines[c], askers[c], f"What does {entity} use?", cfg)
                    lat[c].append(ms)
                    hits[c][group] += entity.casefold() in {
                        e["name"].casefold() for e in res.entities}
        for c in layouts:
            rows = {g: {("leaked_pct" if g == "team-b" else "found_pct"):
                        _rate(hits[c][g], len(plan[g]))} for g in plan}
            report[c] = {"asked_from": askers[c], **rows, "retrieve_ms": pct(lat[c])}
            log(f"scopes {c}: {report[c]}")
    finally:
        for c, st in stores.items():
            st.close()
            drop_database(server_url, f"{base}_scopes_{c}")
    return report


# -- multi-hop ---------------------------------------------------------------------------------
VERB = {"uses": "use", "contains": "contain", "part_of": "belong to",
        "relates_to": "relate to", "mentions": "mention", "defines": "define"}
VERB_3RD = {"uses": "uses", "contains": "contains", "part_of": "belongs to",
            "relates_to": "relates to", "mentions": "mentions", "defines": "defines"}


def two_hop_questions(graph: synthetic.SyntheticGraph, rng: random.Random, n: int
                      ) -> list[dict[str, Any]]:
    """A -p1-> B, B -p2- C: the question names A and both verbs, never B or C. Well posed:
    A is the subject of no other p1 fact with an object of B's type, and B has no other p2
    fact, so exactly one pair of facts answers it."""
    touching: dict[int, list[int]] = {}
    for i, r in enumerate(graph.relations):
        touching.setdefault(r.subject, []).append(i)
        touching.setdefault(r.object, []).append(i)
    ents, rels = graph.entities, graph.relations
    out: list[dict[str, Any]] = []
    while len(out) < n:
        r1 = rels[rng.randrange(len(rels))]
        b_type = ents[r1.object].type
        twins = [i for i in touching.get(r1.subject, []) if rels[i].subject == r1.subject
                 and rels[i].predicate == r1.predicate and ents[rels[i].object].type == b_type]
        nxt = [i for i in touching.get(r1.object, []) if rels[i] is not r1
               and r1.subject not in (rels[i].subject, rels[i].object)]
        if len(twins) != 1 or not nxt or ents[r1.subject].alias_of is not None:
            continue
        r2 = rels[rng.choice(nxt)]
        if sum(rels[i].predicate == r2.predicate for i in nxt) != 1:
            continue
        b = ents[r1.object]
        q = (f"What does the {b.type} that {ents[r1.subject].name} {VERB_3RD[r1.predicate]} "
             f"{VERB[r2.predicate]}?")
        out.append({"question": q, "hop1": r1.fact, "hop2": r2.fact})
    return out


CONFIGS = [("split", 1), ("split", 2), ("split", 3), ("rrf", 1), ("rrf", 2)]


def run_multihop(store: KnowledgeStore, graph: synthetic.SyntheticGraph, n: int,
                 log: Callable[[str], None]) -> dict[str, Any]:
    rng = random.Random(23)
    questions = two_hop_questions(graph, rng, n)
    standard = [q for q in synthetic.generate_queries(graph, 2 * n, seed=99)
                if q.kind in ("exact", "multiword", "typo")][:n]
    engine = store.search_engine(60_000)
    base = search_config()
    cfgs = {f"{r}/hops={h}": replace(base, recipe=r, max_hops=h) for r, h in CONFIGS}
    for q in questions[:5]:  # warm-up
        for cfg in cfgs.values():
            ask(engine, synthetic.SCOPE, q["question"], cfg)
    acc = {k: {"hop1": 0, "hop2": 0, "both": 0, "ms": [], "std_hit": 0, "std_ms": [],
               "pair_fact": 0, "labels": {}} for k in cfgs}
    pairs = [q for q in standard if q.kind == "multiword"]
    order = list(cfgs)
    for i, q in enumerate(questions):
        for k in order[i % len(order):] + order[:i % len(order)]:  # rotate: no config first
            res, ms = ask(engine, synthetic.SCOPE, q["question"], cfgs[k])
            got = {f["fact"]: f for f in res.facts}
            a = acc[k]
            a["ms"].append(ms)
            a["hop1"] += q["hop1"] in got
            a["hop2"] += q["hop2"] in got
            a["both"] += q["hop1"] in got and q["hop2"] in got
            for fact, f in got.items():
                kind = "target" if fact in (q["hop1"], q["hop2"]) else "other"
                a["labels"].setdefault(kind, {}).setdefault(f["agreement"], 0)
                a["labels"][kind][f["agreement"]] += 1
    for i, q in enumerate(standard):
        for k in order[i % len(order):] + order[:i % len(order)]:
            res, ms = ask(engine, synthetic.SCOPE, q.text, cfgs[k])
            names = {e["name"].casefold() for e in res.entities}
            acc[k]["std_ms"].append(ms)
            acc[k]["std_hit"] += all(t.casefold() in names for t in q.targets)
            if q.kind == "multiword":  # a fact linking the two named entities came back
                want = {t.casefold() for t in q.targets}
                acc[k]["pair_fact"] += any({f["subject"].casefold(), f["object"].casefold()}
                                           == want for f in res.facts)
    log("multihop done")
    out: dict[str, Any] = {"two_hop_questions": len(questions), "standard_queries": len(standard),
                           "examples": [q["question"] for q in questions[:3]]}
    for k, a in acc.items():
        out[k] = {"hop1_pct": _rate(a["hop1"], n), "hop2_pct": _rate(a["hop2"], n),
                  "both_pct": _rate(a["both"], n), "retrieve_ms": pct(a["ms"]),
                  "standard_target_found_pct": _rate(a["std_hit"], len(standard)),
                  "standard_retrieve_ms": pct(a["std_ms"]),
                  "multiword_pair_fact_pct": _rate(a["pair_fact"], len(pairs)),
                  "labels": a["labels"],
                  "target_share_by_label_pct": {
                      lab: _rate(a["labels"].get("target", {}).get(lab, 0),
                                 sum(a["labels"].get(k2, {}).get(lab, 0)
                                     for k2 in ("target", "other")))
                      for lab in ("high", "medium", "low")}}
    return out


# -- report ------------------------------------------------------------------------------------
def markdown(rep: dict[str, Any]) -> str:
    lines = [f"Machine: {rep['machine']}; graph {rep['label']}; {rep['date']}.", ""]
    if "temporal" in rep:
        t = rep["temporal"]
        lines += ["| temporal (150 orgs x 3 CEOs) | exactly right now | stale now | "
                  "exactly right as of 2020 | open CEO facts | write ms/fact | p50 / p95 ms |",
                  "|---|---|---|---|---|---|---|"]
        for cond in ("before", "after"):
            c = t[cond]
            lines.append(f"| {cond} | {c['now']['exactly_right_pct']} % | "
                         f"{c['now']['stale_returned_pct']} % | "
                         f"{c['as_of_2020']['exactly_right_pct']} % | {c['open_ceo_facts']} | "
                         f"{c['write_ms_per_fact']} | {c['now']['retrieve_ms']['p50']} / "
                         f"{c['now']['retrieve_ms']['p95']} |")
        lines.append("")
    if "scopes" in rep:
        s = rep["scopes"]
        lines += ["| scopes (asked from team-a) | own found | realm found | platform found | "
                  "team-b leaked | p50 / p95 ms |", "|---|---|---|---|---|---|"]
        for cond in ("before_isolated", "before_shared", "after"):
            c = s[cond]
            lines.append(f"| {cond} | {c['team-a']['found_pct']} % | "
                         f"{c['realm']['found_pct']} % | {c['platform']['found_pct']} % | "
                         f"{c['team-b']['leaked_pct']} % | {c['retrieve_ms']['p50']} / "
                         f"{c['retrieve_ms']['p95']} |")
        lines.append("")
    if "multihop" in rep:
        m = rep["multihop"]
        lines += ["| multi-hop | hop-1 fact | hop-2 fact | both | p50 / p95 ms | "
                  "standard: target found | multiword: pair fact | standard p50 / p95 ms | "
                  "targets among high / medium / low |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r, h in CONFIGS:
            c = m[f"{r}/hops={h}"]
            share = c["target_share_by_label_pct"]
            lines.append(f"| {r}, max_hops {h} | {c['hop1_pct']} % | {c['hop2_pct']} % | "
                         f"{c['both_pct']} % | {c['retrieve_ms']['p50']} / "
                         f"{c['retrieve_ms']['p95']} | {c['standard_target_found_pct']} % | "
                         f"{c['multiword_pair_fact_pct']} % | "
                         f"{c['standard_retrieve_ms']['p50']} / "
                         f"{c['standard_retrieve_ms']['p95']} | {share['high']} / "
                         f"{share['medium']} / {share['low']} % |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.beyond",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=10_000)
    ap.add_argument("--relations", type=int, default=30_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--batch-size", type=int, default=10_000)
    ap.add_argument("--questions", type=int, default=150)
    ap.add_argument("--only", default="temporal,scopes,multihop")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--data-dir", type=Path, default=Path("/tmp/krag-bench"))
    where.add_argument("--database-url")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--out-dir", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    label = size_label(args.entities)
    params = {"entities": args.entities, "relations": args.relations, "seed": args.seed,
              "batch_size": args.batch_size, "generator": 1}
    graph = synthetic.generate_graph(args.entities, args.relations, args.seed)
    base = f"krag_bench_{label}"
    rep: dict[str, Any] = {"label": label, "params": params, "machine": machine(),
                           "date": datetime.now(UTC).isoformat(timespec="seconds")}
    with bench_server(args.data_dir, args.database_url) as server_url:
        store, load = prepare_database(server_url, base, params, args.reuse, graph, log)
        rep["load"] = load
        if "multihop" in only:
            rep["multihop"] = run_multihop(store, graph, args.questions, log)
        store.close()
        if "temporal" in only:
            rep["temporal"] = run_temporal(server_url, base, graph, args.questions, log)
        if "scopes" in only:
            rep["scopes"] = run_scopes(server_url, base, graph, min(args.questions, 100), log)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"beyond_{label}.json"
    out.write_text(json.dumps(rep, indent=1, default=str))
    print(markdown(rep))
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
