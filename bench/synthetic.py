"""Seeded synthetic knowledge graph for benchmarks: entities, facts, embeddings, queries.

The graph imitates what LLM extraction produces from a technical corpus:

- names built from word lists: people (first + last name, a share of generated surnames),
  organisations (``Zentrix Labs``, ``Blue River Systems``), technologies (``KorvalaDB``,
  ``GraphFlow``), concepts (``incremental data lineage``), places and document sections;
  many names share words (``Labs``, ``Data``), and ~5 % are near-duplicates of another name
  (abbreviations, typos, ``Corp`` vs ``Corporation``);
- 1-2 sentence summaries from a small vocabulary, so common words (``data``, ``system``)
  appear in most of them, and summaries mention other entities by name;
- facts as sentences (``X uses Y for stream processing.``) with a hub-heavy degree
  distribution and a preference for endpoints in the same topic cluster;
- 384-d unit embeddings: one random centre per topic cluster plus noise, so vector
  neighbours are meaningful (same cluster); a fact's vector is near its endpoints' mean;
- chunks the facts were "extracted" from (:func:`chunk_layout`): about one per 3 entities, in
  documents of 50, each the sentences of a run of facts about one topic cluster, with the
  provenance of every fact and entity pointing at the chunks that state them; a chunk's
  vector is near the mean of its facts' vectors.

Everything derives from ``seed``: the same arguments give the same graph and the same queries.
Embeddings are generated per load batch (never all held as Python lists). Queries carry the
text as typed and the same request as a natural question (``BenchQuery.question``).

Not run by itself: imported by ``bench.retrieval_latency``, ``bench.export_synthetic`` and
``bench.peer_compare``, which load it into PostgreSQL or export it for the peer.
"""

from __future__ import annotations

import math
import random
import string
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from graph_flows.shared.threads import ContextThreadPool
from graph_flows.shared.untrusted import scan_chunk
from storage import (
    DocumentIn,
    EntityIn,
    KnowledgeStore,
    RelationIn,
    bulk_progress,
    bulk_vectors,
    deferred_indexes,
    fulltext,
    ids,
    injection_spans,
    synonyms,
)
from storage.documents import chunk_ids_for

DIM = 384
SCOPE = "bench"


def _words(text: str, sep: str | None = None) -> list[str]:
    return [w.strip() for w in text.split(sep) if w.strip()]


FIRST = _words("""
Ada Alan Grace Linus Barbara Edsger Donald Margaret Ken Dennis Bjarne Guido James
Tim Vint Radia Frances John Katherine Claude Niklaus Leslie Tony Fran Shafi Sophie Hedy Anita
Jean Ivan Rosalind Carl Marie Emmy Lise Nikola Ada Robin Priya Arjun Mei Hiroshi Yuki Lars
Ingrid Sven Olga Dmitri Elena Mateo Lucia Diego Camila Omar Fatima Amir Leila Kwame Amara
Chidi Zanele Noah Emma Liam Olivia Ethan Ava Lucas Mia Mason Isabella Logan Harper Elijah
Evelyn Aiden Abigail Caleb Ella Owen Scarlett Wyatt Chloe Henry Nora Julian Hazel Levi Aurora
Isaac Violet Gabriel Stella Anthony Lily Samuel Zoe Jack Luna Leo Ruby Theo Iris Felix Clara
Hugo Alice Oscar Maya Victor Nina Xavier Rosa Yusuf Sara Tariq Anya Bruno Greta Paulo
Ines""")

LAST = _words("""
Lovelace Turing Hopper Torvalds Liskov Dijkstra Knuth Hamilton Thompson Ritchie
Stroustrup Rossum Gosling Berners Cerf Perlman Allen McCarthy Johnson Shannon Wirth Lamport
Hoare Goldwasser Wilson Lamarr Borg Sammet Sutherland Franklin Sagan Curie Noether Meitner
Tesla Milner Patel Sharma Chen Wang Tanaka Sato Nielsen Larsen Andersen Petrov Ivanova
Garcia Martinez Lopez Rodriguez Hassan Rahman Haddad Mensah Okafor Dlamini Smith Jones
Brown Taylor Walker Wright Robinson Thompson Clarke Hughes Edwards Green Hall Wood Harris
Lewis Martin Jackson Clark Young King Scott Baker Adams Nelson Hill Campbell Mitchell Roberts
Carter Phillips Evans Turner Torres Parker Collins Stewart Morris Murphy Cook Rogers Morgan
Peterson Cooper Reed Bailey Bell Gomez Kelly Howard Ward Cox Diaz Richardson Brooks Watson
Schmidt Muller Weber Fischer Becker Hoffmann Rossi Russo Bianchi Romano Moreau Laurent""")

SYLLABLES = _words("""
ka zen tri vor lu mi dra qel sto bri nex pho ra tal ver xo yun gri fal mor dak
sil ven tor ash el in or um ix ax on ar is ko ba ne su te lo vi da re po gu fi ze ha cy mo
ny ro tu be qua sky flo""")

ORG_SUFFIX = _words("""
Labs Systems Inc Corp Corporation Group Foundation Institute Technologies
Analytics Software Networks Partners Consulting Holdings Research Dynamics Solutions Works
Collective Consortium""")
ADJ = _words("""
Blue Red Green Silver Golden Northern Southern Eastern Western Open Bright Deep Swift
Quiet Iron Crystal Solar Lunar Rapid Clear Prime Global United Modern Urban Coastal Alpine
Royal Digital Quantum""")
NOUN = _words("""
River Mountain Harbor Forest Valley Bridge Summit Cloud Stone Ocean Beacon Falcon
Cedar Maple Oak Pine Lake Meadow Canyon Delta Vertex Orbit Signal Pixel Vector Lattice Matrix
Circuit Anchor Compass""")
TECH_WORD = _words("""
Graph Flow Stream Data Query Store Cache Vector Index Search Lake Mesh Grid Core
Base Hub Forge Pipe Sync Scale Shift Spark Kit Lens Vault Bridge Engine Studio Cloud Edge
Pulse Node Link Trace Scope""")
TECH_SUFFIX = _words("""
DB QL JS ML Ops IO X Lite Pro Server Engine Studio Cloud Runtime SDK API""")
CONCEPT_ADJ = _words("""
distributed incremental semantic probabilistic federated streaming relational
temporal causal adaptive hierarchical sparse dense contextual differential approximate
consistent eventual transactional columnar vectorized declarative reactive event-driven
zero-copy multi-tenant fault-tolerant privacy-preserving self-supervised low-latency""")
CONCEPT_NOUN = _words("""
data lineage consensus replication sharding caching indexing retrieval
embedding clustering compression encryption scheduling partitioning serialization
tokenization ranking deduplication provenance governance observability orchestration
inference training evaluation summarization extraction reasoning attention search storage
query planning recovery checkpointing versioning validation normalization aggregation
sampling monitoring""")
LOC_PREFIX = _words("North South East West Port New Upper Lower Fort Lake Mount Saint")
LOC_SUFFIX = _words("ton ville burg field ford haven port stad dale mouth bury wick")

DOMAINS = _words("""
data cloud healthcare finance logistics retail energy manufacturing research education security
media telecom government transport""")
# Two phrases keep a line break ("batch\nanalytics", "fraud\ndetection"), as text extracted
# from PDFs often does; kept as generated so benchmark databases stay reproducible.
TOPICS = _words("""
data pipelines, stream processing, query optimisation, data storage, model training,
knowledge graphs, access control, data quality, system monitoring, vector search, batch
analytics, event processing, data integration, schema migration, cost reporting, fraud
detection, capacity planning, log analysis, document search, data governance""", ",")
ROLES = _words("""
engineer researcher architect scientist manager analyst founder director
developer designer consultant maintainer""")
ORG_KINDS = _words("""
company startup research lab consultancy foundation vendor agency
cooperative institute""")
TECH_KINDS = _words("""
database library framework service platform tool protocol engine format
runtime""")
FEATURES = _words("""
replication, caching, sharding, encryption, streaming, versioning, full-text search,
vector search, access control, monitoring, backups, schema evolution, batch loading,
real-time dashboards""", ",")
PURPOSES = TOPICS + ["reporting", "testing", "auditing", "deployment", "indexing", "backups"]

TYPE_WEIGHTS = {"person": 0.25, "organization": 0.18, "technology": 0.27, "concept": 0.2,
                "location": 0.06, "section": 0.04}
PREDICATES = ("uses", "contains", "part_of", "relates_to", "mentions", "defines")
PRED_WEIGHTS = (0.3, 0.12, 0.12, 0.26, 0.12, 0.08)
QUERY_KINDS = ("exact", "typo", "partial", "multiword", "summary", "nomatch")


@dataclass(frozen=True, slots=True)
class EntitySpec:
    name: str
    type: str
    summary: str
    cluster: int
    alias_of: int | None = None


@dataclass(frozen=True, slots=True)
class RelationSpec:
    subject: int
    predicate: str
    object: int
    fact: str
    valid_at: datetime | None = None


@dataclass
class SyntheticGraph:
    """Names, summaries and facts (no vectors; those come per batch in :func:`load_graph`)."""

    seed: int
    entities: list[EntitySpec]
    relations: list[RelationSpec]
    clusters: int
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BenchQuery:
    """A query, its kind, a detail (entity type or no-match flavour) and the entity names a
    good retrieval should return (exact, typo: the entity; multiword: both endpoints).

    ``text`` is the query as typed (often only a name or a few words); ``question`` the same
    request asked as a natural question, which is what the benchmarks send through the query
    graph (analysis, and the ``ppr`` recipe's passage and fact matching)."""

    kind: str
    text: str
    variant: str = ""
    targets: tuple[str, ...] = ()
    question: str = ""


# -- names -------------------------------------------------------------------------------------
def _gen_word(rng: random.Random, lo: int = 2, hi: int = 3) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(lo, hi))).capitalize()


def _person(rng: random.Random) -> str:
    last = rng.choice(LAST) if rng.random() < 0.5 else _gen_word(rng)
    if rng.random() < 0.15:
        return f"{rng.choice(FIRST)} {rng.choice(string.ascii_uppercase)}. {last}"
    return f"{rng.choice(FIRST)} {last}"


def _organization(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        return f"{_gen_word(rng)} {rng.choice(ORG_SUFFIX)}"
    if r < 0.7:
        return f"{rng.choice(ADJ)} {rng.choice(NOUN)} {rng.choice(ORG_SUFFIX)}"
    if r < 0.85:
        return f"{rng.choice(LAST)} & {rng.choice(LAST)}"
    return f"{rng.choice(LAST)} {rng.choice(ORG_SUFFIX)}"


def _technology(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.3:
        return _gen_word(rng, 2, 3)
    if r < 0.55:
        return f"{_gen_word(rng, 1, 2)}{rng.choice(TECH_SUFFIX)}"
    if r < 0.8:
        return f"{_gen_word(rng)} {rng.choice(TECH_WORD)}"
    word = f"{rng.choice(TECH_WORD)}{rng.choice(TECH_WORD)}"
    return word if rng.random() < 0.5 else f"{word} {rng.randint(2, 9)}"


def _concept(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        name = f"{rng.choice(CONCEPT_ADJ)} {rng.choice(CONCEPT_NOUN)}"
    else:
        name = (f"{rng.choice(CONCEPT_ADJ)} {rng.choice(CONCEPT_NOUN)} "
                f"{rng.choice(CONCEPT_NOUN)}")
    return name.title() if rng.random() < 0.5 else name


def _location(rng: random.Random) -> str:
    base = _gen_word(rng, 1, 2).lower() + rng.choice(LOC_SUFFIX)
    base = base.capitalize()
    return f"{rng.choice(LOC_PREFIX)} {base}" if rng.random() < 0.4 else base


def _section(rng: random.Random) -> str:
    return (f"Section {rng.randint(1, 40)}.{rng.randint(1, 20)} "
            f"{rng.choice(CONCEPT_NOUN).title()} {rng.choice(CONCEPT_NOUN).title()}")


_MAKERS = {"person": _person, "organization": _organization, "technology": _technology,
           "concept": _concept, "location": _location, "section": _section}

_ABBREV = {"Corporation": "Corp", "Corp": "Corporation", "Inc": "Incorporated",
           "Technologies": "Tech", "Laboratories": "Labs", "Labs": "Laboratories",
           "Systems": "Sys", "Institute": "Inst"}


def typo(word: str, rng: random.Random) -> str:
    """One edit (swap, drop, double or replace a letter) away from ``word``; never ``word``."""
    for _ in range(10):
        out = _edit(word, rng)
        if out.casefold() != word.casefold():
            return out
    return word + "x"


def _edit(word: str, rng: random.Random) -> str:
    if len(word) < 3:
        return word + rng.choice(string.ascii_lowercase)
    i = rng.randrange(1, len(word) - 1)
    op = rng.random()
    if op < 0.3:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if op < 0.55:
        return word[:i] + word[i + 1:]
    if op < 0.75:
        return word[:i] + word[i] + word[i:]
    return word[:i] + rng.choice(string.ascii_lowercase) + word[i + 1:]


def _alias(name: str, rng: random.Random) -> str:
    words = name.split()
    if words[-1] in _ABBREV and rng.random() < 0.7:
        return " ".join(words[:-1] + [_ABBREV[words[-1]]])
    if len(words) >= 2 and words[0][0].isupper() and rng.random() < 0.4:
        return f"{words[0][0]}. {' '.join(words[1:])}"
    j = max(range(len(words)), key=lambda k: len(words[k]))
    words[j] = typo(words[j], rng)
    return " ".join(words)


# -- summaries and facts -----------------------------------------------------------------------
def _summary(kind: str, name: str, rng: random.Random, pick: dict[str, list[str]]) -> str:
    topic, topic2 = rng.sample(TOPICS, 2)
    domain = rng.choice(DOMAINS)

    def some(t: str) -> str:
        pool = pick.get(t) or [name]
        return rng.choice(pool)

    if kind == "person":
        role = rng.choice(ROLES)
        article = "an" if role[0] in "aeiou" else "a"
        first = (f"{name} is {article} {role} at {some('organization')} working on "
                 f"{topic} for {domain} data systems.")
        second = f"Known for work on {topic2} with {some('technology')}."
    elif kind == "organization":
        first = (f"{name} is a {rng.choice(ORG_KINDS)} that builds {topic} products for "
                 f"{domain} teams.")
        second = f"Its platform relies on {some('technology')} for {topic2}."
    elif kind == "technology":
        first = f"{name} is a {rng.choice(TECH_KINDS)} for {topic} in {domain} systems."
        second = (f"It supports {rng.choice(FEATURES)} and {rng.choice(FEATURES)} and is "
                  f"maintained by {some('organization')}.")
    elif kind == "concept":
        first = (f"{name} is a technique in {domain} data systems for {topic} and "
                 f"{topic2}.")
        second = f"It is implemented in {some('technology')}."
    elif kind == "location":
        first = f"{name} is a city where {some('organization')} runs a {domain} data centre."
        second = f"It hosts a community around {topic}."
    else:
        first = f"{name} of the design document covers {topic} and {topic2} of the system."
        second = f"It references {some('technology')}."
    return first if rng.random() < 0.35 else f"{first} {second}"


def _fact(pred: str, s: str, o: str, rng: random.Random) -> str:
    purpose = rng.choice(PURPOSES)
    if pred == "uses":
        return f"{s} uses {o} for {purpose}."
    if pred == "contains":
        return f"{s} contains {o} as part of its {purpose} system."
    if pred == "part_of":
        return f"{s} is part of {o} since {rng.randint(1995, 2025)}."
    if pred == "relates_to":
        return f"{s} relates to {o} through {purpose}."
    if pred == "mentions":
        return f"{s} mentions {o} in the context of {purpose}."
    return f"{s} defines {o} as a {rng.choice(CONCEPT_ADJ)} approach to {purpose}."


# -- the graph ---------------------------------------------------------------------------------
def generate_graph(n_entities: int, n_relations: int, seed: int = 42) -> SyntheticGraph:
    """Names, summaries and facts for ``n_entities`` entities and ``n_relations`` facts."""
    t0 = time.perf_counter()
    rng = random.Random(seed)
    clusters = max(8, n_entities // 500)
    types = rng.choices(list(TYPE_WEIGHTS), weights=list(TYPE_WEIGHTS.values()), k=n_entities)
    seen: set[tuple[str, str]] = set()
    names: list[tuple[str, str, int | None]] = []
    for i, kind in enumerate(types):
        alias_of = None
        if names and rng.random() < 0.05:  # a near-duplicate of an earlier entity
            alias_of = rng.randrange(len(names))
            kind = names[alias_of][1]
            name = _alias(names[alias_of][0], rng)
        else:
            name = _MAKERS[kind](rng)
        tries = 0
        while (ids.normalize_name(name), kind) in seen:
            tries += 1
            name = _MAKERS[kind](rng) if tries < 20 else f"{_MAKERS[kind](rng)} {i}"
            alias_of = None
        seen.add((ids.normalize_name(name), kind))
        names.append((name, kind, alias_of))
    by_type: dict[str, list[str]] = {}
    for name, kind, _ in names:
        by_type.setdefault(kind, []).append(name)
    pick = {k: v[:5000] for k, v in by_type.items()}
    cluster_of = [rng.randrange(clusters) for _ in names]
    for i, (_, _, alias_of) in enumerate(names):  # aliases sit next to what they alias
        if alias_of is not None:
            cluster_of[i] = cluster_of[alias_of]
    entities = [EntitySpec(n, k, _summary(k, n, rng, pick), cluster_of[i], a)
                for i, (n, k, a) in enumerate(names)]
    members: dict[int, list[int]] = {}
    for i, c in enumerate(cluster_of):
        members.setdefault(c, []).append(i)
    relations: list[RelationSpec] = []
    taken: set[tuple[int, str, int]] = set()
    base = datetime(2015, 1, 1, tzinfo=UTC)
    while len(relations) < n_relations:
        # hub-heavy subjects: a quarter of the facts start at the first 2 % of entities
        if rng.random() < 0.25:
            s = rng.randrange(max(1, n_entities // 50))
        else:
            s = rng.randrange(n_entities)
        same_cluster = rng.random() < 0.6
        o = rng.choice(members[cluster_of[s]]) if same_cluster else rng.randrange(n_entities)
        pred = rng.choices(PREDICATES, weights=PRED_WEIGHTS)[0]
        if o == s or (s, pred, o) in taken:
            continue
        taken.add((s, pred, o))
        valid = base + timedelta(days=rng.randrange(3650)) if rng.random() < 0.3 else None
        relations.append(RelationSpec(s, pred, o, _fact(pred, names[s][0], names[o][0], rng),
                                      valid))
    words = {w for e in entities for w in ids.normalize_name(e.name).split()}
    stats = {"entities": n_entities, "relations": n_relations, "clusters": clusters,
             "distinct_name_words": len(words),
             "aliases": sum(e.alias_of is not None for e in entities),
             "types": {k: len(v) for k, v in by_type.items()},
             "generate_s": round(time.perf_counter() - t0, 2)}
    return SyntheticGraph(seed, entities, relations, clusters, stats)


# -- embeddings --------------------------------------------------------------------------------
def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.clip(np.linalg.norm(m, axis=1, keepdims=True), 1e-12, None)


def cluster_centres(graph: SyntheticGraph) -> np.ndarray:
    rng = np.random.default_rng([graph.seed, 0])
    return _unit(rng.standard_normal((graph.clusters, DIM)))


def entity_vectors(graph: SyntheticGraph, start: int, stop: int,
                   centres: np.ndarray) -> np.ndarray:
    """Unit vectors of entities ``start..stop`` (cluster centre + noise; deterministic)."""
    rng = np.random.default_rng([graph.seed, 1, start])
    cl = np.array([e.cluster for e in graph.entities[start:stop]])
    noise = rng.standard_normal((stop - start, DIM)) * (0.9 / math.sqrt(DIM))
    return _unit(centres[cl] + noise).astype(np.float32)


def relation_vectors(graph: SyntheticGraph, start: int, stop: int,
                     ent: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng([graph.seed, 2, start])
    rel = graph.relations[start:stop]
    s = np.array([r.subject for r in rel])
    o = np.array([r.object for r in rel])
    noise = rng.standard_normal((len(rel), DIM)) * (0.5 / math.sqrt(DIM))
    return _unit(ent[s] + ent[o] + noise).astype(np.float32)


# -- loading -----------------------------------------------------------------------------------
# Indexes dropped before a bulk load and rebuilt after it (migrations 0001, 0002, 0006
# and 0018).
LOAD_INDEXES = {
    "entities_embedding_hnsw":
        "CREATE INDEX entities_embedding_hnsw ON entities USING hnsw (embedding vector_cosine_ops)",
    "relations_embedding_bq_hnsw":  # migration 0018: the facts' sign bits
        "CREATE INDEX relations_embedding_bq_hnsw ON relations USING hnsw "
        f"((binary_quantize(embedding)::bit({DIM})) bit_hamming_ops)",
    "entities_name_trgm": "CREATE INDEX entities_name_trgm ON entities USING gin "
                          "(name gin_trgm_ops) WITH (fastupdate = off)",  # migration 0017
    "entities_summary_trgm": "CREATE INDEX entities_summary_trgm ON entities USING gin "
                             "(summary gin_trgm_ops)",
    "relations_fact_trgm": "CREATE INDEX relations_fact_trgm ON relations USING gin "
                           "(fact gin_trgm_ops)",
    "relations_predicate_trgm": "CREATE INDEX relations_predicate_trgm ON relations USING gin "
                                "(predicate gin_trgm_ops)",
    "entities_name_words_gin": "CREATE INDEX entities_name_words_gin ON entities USING gin "
                               "(name_words)",
    "entity_words_trgm": "CREATE INDEX entity_words_trgm ON entity_words USING gin "
                         "(word gin_trgm_ops)",
    # migration 0006
    "chunks_embedding_hnsw":
        "CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops)",
    "chunks_tsv_gin": "CREATE INDEX chunks_tsv_gin ON chunks USING gin (tsv)",
}


# -- the chunks the facts come from --------------------------------------------------------------
ENTITIES_PER_CHUNK = 3
CHUNKS_PER_DOC = 50


@dataclass
class ChunkLayout:
    """The documents and chunks the graph was "extracted" from, consistent with it.

    Facts are ordered by their subject's topic cluster (shuffled within it) and cut into
    consecutive runs of ``relations / chunks`` facts on average (each boundary moved by up
    to 0.4 of that, so 0.2x to 1.8x), one run per chunk;
    a chunk's text is its facts' sentences, every relation's provenance is its chunk and every
    entity's the chunks whose facts name it, so a hub (the generator's hub-heavy subjects) is
    in many chunks. An entity in no fact gets its summary appended to a chunk of its cluster
    (the names that summary mentions are not linked to it). Chunks are grouped into documents
    of ``per_doc``, consecutive, so a document covers a few clusters."""

    documents: list[tuple[DocumentIn, list[str]]]
    chunk_ids: list[str]
    relation_chunk: np.ndarray
    """Chunk index of each relation."""
    entity_chunks: list[list[int]]
    """Chunk indexes of each entity, ascending."""
    summary_chunk: dict[int, int]
    """Entity index -> the chunk its summary was appended to (entities in no fact)."""
    stats: dict[str, Any] = field(default_factory=dict)


def _cuts(n_rel: int, n_chunks: int, rng: random.Random) -> list[int]:
    """Start offsets of ``n_chunks`` non-empty runs over ``n_rel`` facts, plus ``n_rel``."""
    step = n_rel / n_chunks
    cuts = [0]
    for k in range(1, n_chunks):
        want = round(k * step + rng.uniform(-0.4, 0.4) * step)
        cuts.append(min(max(cuts[-1] + 1, want), n_rel - (n_chunks - k)))
    return [*cuts, n_rel]


def chunk_layout(graph: SyntheticGraph, scope: str = SCOPE, per_doc: int = CHUNKS_PER_DOC,
                 entities_per_chunk: int = ENTITIES_PER_CHUNK) -> ChunkLayout:
    """About one chunk per ``entities_per_chunk`` entities (see :class:`ChunkLayout`)."""
    rng = random.Random(graph.seed + 17)
    ents, rels = graph.entities, graph.relations
    n_chunks = max(1, min(len(ents) // entities_per_chunk, len(rels)))
    keys = [rng.random() for _ in rels]
    order = sorted(range(len(rels)), key=lambda i: (ents[rels[i].subject].cluster, keys[i]))
    cuts = _cuts(len(rels), n_chunks, rng) if rels else [0] * n_chunks + [0]
    relation_chunk = np.zeros(len(rels), dtype=np.int32)
    entity_chunks: list[list[int]] = [[] for _ in ents]
    cluster_chunks: dict[int, list[int]] = {}
    facts: list[list[int]] = []
    for c in range(n_chunks):
        run = order[cuts[c]:cuts[c + 1]]
        facts.append(run)
        relation_chunk[run] = c
        for e in dict.fromkeys(x for i in run for x in (rels[i].subject, rels[i].object)):
            entity_chunks[e].append(c)
        if run:
            cluster_chunks.setdefault(ents[rels[run[0]].subject].cluster, []).append(c)
    summary_chunk: dict[int, int] = {}
    extra: dict[int, list[int]] = {}
    for e, chunks in enumerate(entity_chunks):
        if not chunks:
            c = rng.choice(cluster_chunks.get(ents[e].cluster) or range(n_chunks))
            summary_chunk[e] = c
            extra.setdefault(c, []).append(e)
            chunks.append(c)
    texts = [" ".join([rels[i].fact for i in facts[c]]
                      + [ents[e].summary for e in extra.get(c, [])]) for c in range(n_chunks)]
    documents: list[tuple[DocumentIn, list[str]]] = []
    chunk_ids: list[str] = []
    for d, start in enumerate(range(0, n_chunks, per_doc)):
        part = texts[start:start + per_doc]
        first = facts[start][0] if facts[start] else None
        topic = TOPICS[ents[rels[first].subject].cluster % len(TOPICS)] if first is not None \
            else "summaries"
        doc = DocumentIn(scope=scope, source="synthetic", uri=f"synthetic/topic-{d:05d}.md",
                         content_hash=ids.content_hash("\n".join(part)),
                         title=f"Synthetic document {d}: {' '.join(topic.split())}")
        documents.append((doc, part))
        chunk_ids.extend(cid for cid, _ in chunk_ids_for(doc.id, part))
    per_entity = sorted(len(c) for c in entity_chunks)
    sizes = sorted(len(f) for f in facts)
    stats = {"chunks": n_chunks, "documents": len(documents),
             "facts_per_chunk": {"mean": round(len(rels) / n_chunks, 2),
                                 "min": sizes[0], "max": sizes[-1]},
             "chunk_chars_mean": round(sum(map(len, texts)) / n_chunks),
             "entity_chunks": {"p50": per_entity[len(per_entity) // 2],
                               "p99": per_entity[int(len(per_entity) * 0.99)],
                               "max": per_entity[-1]} if per_entity else {},
             "entity_provenance": sum(per_entity), "summary_only_entities": len(summary_chunk)}
    return ChunkLayout(documents, chunk_ids, relation_chunk, entity_chunks, summary_chunk, stats)


def chunk_vectors(graph: SyntheticGraph, sums: np.ndarray, start: int, stop: int
                  ) -> np.ndarray:
    """Unit vectors of chunks ``start..stop`` from ``sums`` (the sum of the vectors of each
    chunk's facts and appended summaries' entities): their mean direction plus noise."""
    rng = np.random.default_rng([graph.seed, 3, start])
    noise = rng.standard_normal((stop - start, DIM)) * (0.5 / math.sqrt(DIM))
    return _unit(_unit(sums[start:stop]) + noise).astype(np.float32)


# -- loading -----------------------------------------------------------------------------------
def _batches(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


# The tables whose secondary indexes a ``defer_index`` load drops and builds after it.
DEFER_TABLES = ("entities", "relations", "entity_provenance", "relation_provenance")


def load_graph(
    store: KnowledgeStore, graph: SyntheticGraph, *, scope: str = SCOPE,
    batch_size: int = 10_000, rebuild_indexes: bool = True, defer_index: bool = False,
    maintenance_work_mem: str = "1GB", workers: int = 2, log: Any = None,
    progress: LoadProgress | None = None,
) -> dict[str, Any]:
    """Write the documents and chunks of :func:`chunk_layout` (``sync_document``), then the
    graph through ``KnowledgeStore.write_graph`` (COPY), entities first, then every chunk's
    embedding (:func:`chunk_vectors`) with its instruction-like spans, as an ingest stores
    them (COPY + one UPDATE per batch; :func:`fill_injection_spans` for any left without).

    With ``rebuild_indexes`` the HNSW and GIN indexes are dropped before the load and built
    after it with ``maintenance_work_mem = 1GB`` and 2 parallel workers, then ANALYZE; last
    the scope's full-text statistics are rebuilt, as an ingest does. With ``defer_index``
    every secondary index of :data:`DEFER_TABLES` (B-trees too) is dropped as well and all
    are built once after the load (:mod:`storage.deferred_indexes`), with
    ``maintenance_work_mem``. Documents, relations, chunk vectors and synonym edges are
    written by ``workers`` threads, one transaction per batch (entities by one: their
    batches update the same ``entity_words`` rows). Returns seconds per phase and the
    layout's statistics (``chunks``).

    With ``progress`` (:class:`LoadProgress`) every committed batch is recorded, and a load
    started again on a database an interrupted one left skips what is there (every write
    is an upsert, so a batch committed but not yet recorded is written again unchanged).
    """
    say = log or (lambda *_: None)
    progress = progress or LoadProgress(None, {})
    resumed = dict(progress.state)
    if resumed:
        say(f"resuming an interrupted load: {resumed}")
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    if progress.done("indexes"):
        pass  # built by the interrupted load: nothing to drop
    elif defer_index:
        with store.connect(autocommit=True) as conn:  # DDL: as the tables' owner
            deferred = deferred_indexes.drop(conn, DEFER_TABLES, also=LOAD_INDEXES)
        say(f"deferred {len(deferred)} indexes: {', '.join(sorted(deferred))}")
    elif rebuild_indexes:
        with store.connect(autocommit=True) as conn:  # DDL: as the tables' owner
            for name in LOAD_INDEXES:
                conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
    layout = chunk_layout(graph, scope)
    times["layout_s"] = time.perf_counter() - t0
    say(f"chunk layout: {layout.stats}")
    writers = _Writers(workers)
    t = time.perf_counter()
    docs = layout.documents
    for n, (start, stop) in enumerate(_batches(len(docs), 20)):
        if n < progress.done("documents"):
            continue
        writers.submit(_sync_documents, store, docs[start:stop],
                       done=progress.marker("documents", n + 1))
        if n % 10 == 9:
            say(f"documents {stop:,}/{len(docs):,} ({time.perf_counter() - t:.0f} s)")
    writers.drain()
    times["documents_s"] = time.perf_counter() - t
    rng = random.Random(graph.seed + 11)
    centres = cluster_centres(graph)
    ent_vecs = np.zeros((len(graph.entities), DIM), dtype=np.float32)
    chunk_sums = np.zeros((len(layout.chunk_ids), DIM), dtype=np.float32)
    ent_ids: list[str] = []
    t1 = time.perf_counter()
    for n, (start, stop) in enumerate(_batches(len(graph.entities), batch_size)):
        vecs = entity_vectors(graph, start, stop, centres)
        ent_vecs[start:stop] = vecs
        batch = []
        for i, (e, v) in enumerate(zip(graph.entities[start:stop], vecs, strict=True), start):
            prov = tuple(layout.chunk_ids[c] for c in layout.entity_chunks[i])
            batch.append(EntityIn(e.name, e.type, scope, e.summary,
                                  round(0.6 + 0.4 * rng.random(), 3), v, prov))
        ent_ids.extend(x.id for x in batch)
        if n < progress.done("entities"):
            continue
        store.write_graph(batch, [])  # one writer: batches share entity_words rows
        progress.mark("entities", n + 1)
        say(f"entities {stop:,}/{len(graph.entities):,} "
            f"({time.perf_counter() - t1:.0f} s)")
    for e, c in layout.summary_chunk.items():
        chunk_sums[c] += ent_vecs[e]
    times["entities_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    for n, (start, stop) in enumerate(_batches(len(graph.relations), batch_size)):
        vecs = relation_vectors(graph, start, stop, ent_vecs)
        np.add.at(chunk_sums, layout.relation_chunk[start:stop], vecs)
        batch_r = [
            RelationIn(ent_ids[r.subject], r.predicate, ent_ids[r.object], r.fact, scope,
                       round(0.5 + 0.5 * rng.random(), 3), v, r.valid_at,
                       chunk_ids=(layout.chunk_ids[layout.relation_chunk[i]],))
            for i, (r, v) in enumerate(zip(graph.relations[start:stop], vecs, strict=True),
                                       start)]
        if n < progress.done("relations"):
            continue
        writers.submit(store.write_graph, [], batch_r, done=progress.marker("relations", n + 1))
        say(f"relations {stop:,}/{len(graph.relations):,} "
            f"({time.perf_counter() - t2:.0f} s)")
    writers.drain()
    times["relations_s"] = time.perf_counter() - t2
    del ent_vecs
    t3 = time.perf_counter()
    texts = [t for _, part in layout.documents for t in part]  # in chunk_ids' order
    for n, (start, stop) in enumerate(_batches(len(layout.chunk_ids), batch_size)):
        if n < progress.done("chunk_vectors"):
            continue
        vecs = chunk_vectors(graph, chunk_sums, start, stop)
        writers.submit(_write_chunk_evidence, store, layout.chunk_ids[start:stop], vecs,
                       texts[start:stop], done=progress.marker("chunk_vectors", n + 1))
        say(f"chunk vectors {stop:,}/{len(layout.chunk_ids):,} "
            f"({time.perf_counter() - t3:.0f} s)")
    writers.drain()
    times["chunk_vectors_s"] = time.perf_counter() - t3
    # chunks an older loader (or an interrupted one) wrote without their spans
    times["injection_spans_s"] = fill_injection_spans(store, scope, workers=workers, log=say)
    if progress.done("indexes"):
        pass
    elif defer_index:
        with store.connect(autocommit=True) as conn:
            built = deferred_indexes.build(conn, maintenance_work_mem=maintenance_work_mem,
                                           log=say)
        times.update({f"index_{k}_s": v for k, v in built.items()})
    elif rebuild_indexes:
        times.update(rebuild(store, log=say))
    progress.mark("indexes", 1)
    t4 = time.perf_counter()
    with store.connect(autocommit=True) as conn:
        conn.exec_driver_sql("VACUUM (ANALYZE) chunks")  # the vector UPDATE left dead rows
        for table in ("entities", "relations", "entity_words", "entity_provenance",
                      "relation_provenance", "documents"):
            conn.exec_driver_sql(f"ANALYZE {table}")
    times["analyze_s"] = time.perf_counter() - t4
    t5 = time.perf_counter()
    with store.connect() as conn:  # what graph_flows.services.ingest.refresh_term_stats does
        rebuilt = fulltext.ensure_term_stats(conn, [scope], max_age_s=0)
        # a resumed load whose statistics were built before it stopped finds none to rebuild
        stale = rebuilt != [scope] and fulltext.stale_term_stats(conn, [scope], max_age_s=0)
    if stale:
        raise RuntimeError(f"the full-text statistics of scope {scope!r} were not rebuilt")
    times["term_stats_s"] = time.perf_counter() - t5
    say(f"full-text statistics: {times['term_stats_s']:.1f} s")
    times["synonyms_s"] = fill_synonyms(store, scope, ent_ids, workers=workers, log=say)
    say(f"synonym edges: {times['synonyms_s']:.1f} s")
    writers.close()
    times["total_s"] = time.perf_counter() - t0
    return {**{k: round(v, 2) for k, v in times.items()}, "chunks": layout.stats,
            "workers": workers, **({"resumed_from": resumed} if resumed else {})}


class LoadProgress:
    """What a load has committed (batches per phase), in ``krag_meta`` under :data:`KEY`
    with the load's parameters (``store`` None: kept in memory only). A progress recorded
    with other parameters is not this load's: it starts from nothing."""

    KEY = "bench_load_progress"

    def __init__(self, store: KnowledgeStore | None, params: dict[str, Any]) -> None:
        self.store, self.params = store, params
        self.state: dict[str, int] = {}
        if store is not None:
            with store.connect() as conn:
                found = bulk_progress.read(conn, self.KEY)
            if found and found.get("params") == params:
                self.state = dict(found["done"])

    def done(self, phase: str) -> int:
        return self.state.get(phase, 0)

    def mark(self, phase: str, n: int) -> None:
        self.state[phase] = max(n, self.done(phase))
        if self.store is not None:
            with self.store.transaction() as conn:
                bulk_progress.write(conn, self.KEY, {"params": self.params,
                                                     "done": self.state})

    def marker(self, phase: str, n: int) -> Any:
        return lambda: self.mark(phase, n)

    def finish(self) -> None:
        """Forget the progress (the load is complete)."""
        if self.store is not None:
            with self.store.transaction() as conn:
                bulk_progress.clear(conn, self.KEY)


class _Writers:
    """Write transactions run by ``workers`` threads (each on its own connection), at most
    two per thread queued; :meth:`drain` waits for all and raises the first failure."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.pool = ContextThreadPool(self.workers, thread_name_prefix="krag-bench-load")
        self.pending: deque[tuple[Future[Any], Any]] = deque()

    def submit(self, fn: Any, *args: Any, done: Any = None) -> None:
        """Queue ``fn(*args)``; ``done()`` runs once it and every earlier task succeeded."""
        while len(self.pending) >= 2 * self.workers:
            self._finish_oldest()
        self.pending.append((self.pool.submit(fn, *args), done))

    def _finish_oldest(self) -> None:
        future, done = self.pending.popleft()
        future.result()
        if done is not None:
            done()

    def drain(self) -> None:
        while self.pending:
            self._finish_oldest()

    def close(self) -> None:
        self.drain()
        self.pool.shutdown()


def _sync_documents(store: KnowledgeStore, docs: list[tuple[DocumentIn, list[str]]]) -> None:
    for doc, texts in docs:
        store.sync_document(doc, texts)


def _write_chunk_evidence(store: KnowledgeStore, chunk_ids: list[str], vecs: np.ndarray,
                          texts: list[str]) -> None:
    """The chunks' vectors and their instruction-like spans (the scanner an ingest stores
    them with: graph_flows.shared.untrusted.scan_chunk), in one UPDATE."""
    spans = [scan_chunk(t) for t in texts]
    with store.transaction() as conn:
        bulk_vectors.copy_chunk_evidence(conn, zip(chunk_ids, vecs, spans, strict=True))


def _scan_page(store: KnowledgeStore, chunk_ids: list[str]) -> None:
    with store.transaction() as conn:
        injection_spans.fill(conn, scan_chunk, chunk_ids=chunk_ids)


SPAN_PAGE = 1_000  # chunks scanned per transaction by fill_injection_spans
# above this many chunks to scan, fill_injection_spans(rebuild=True) drops the chunks'
# secondary indexes for the pass and builds them once after: every UPDATE writes a new row
# version (the pages are full: no HOT update), each costing an HNSW insert and a GIN entry
SPAN_REBUILD_OVER = 50_000


def fill_injection_spans(store: KnowledgeStore, scope: str, *, workers: int = 1,
                         page: int | None = None, rebuild: bool = False,
                         maintenance_work_mem: str = "1GB", log: Any = None) -> float:
    """Scan the chunks of ``scope`` not scanned yet for instruction-like text and store the
    spans (storage.injection_spans), as an ingest stores them for every chunk
    (graph_flows.services.ingest.fill_injection_spans): ``page`` (:data:`SPAN_PAGE`) chunks
    per transaction, by ``workers`` threads; seconds taken. Only chunks whose spans are
    missing are scanned, so an interrupted pass resumes where it stopped. Without the spans
    the queries scan each passage they return (a cost an ingested store does not have).

    With ``rebuild`` (a loaded database: its chunks' indexes exist) and more than
    :data:`SPAN_REBUILD_OVER` chunks to scan, the chunks' secondary indexes are dropped
    first (:mod:`storage.deferred_indexes`: their definitions saved, so an interrupted pass
    still builds them), then the table is compacted (``VACUUM FULL``: every row was
    rewritten) and the indexes built once, with ``maintenance_work_mem``."""
    say = log or (lambda *_: None)
    start = time.perf_counter()
    with store.connect() as conn:
        todo = injection_spans.unscanned_ids(conn, [scope])
        pending = rebuild and bool(deferred_indexes.saved(conn))  # an interrupted pass's
    rebuild = pending or (rebuild and len(todo) > SPAN_REBUILD_OVER)
    if not todo and not rebuild:
        return time.perf_counter() - start
    if rebuild:
        with store.connect(autocommit=True) as conn:  # DDL: as the table's owner
            dropped = deferred_indexes.drop(conn, ("chunks",))
        say(f"dropped for the pass: {', '.join(sorted(dropped))}")
    say(f"scanning {len(todo):,} chunks for instruction-like text")
    writers = _Writers(workers)
    for n, (a, b) in enumerate(_batches(len(todo), page or SPAN_PAGE)):
        writers.submit(_scan_page, store, todo[a:b])
        if n % 50 == 49:
            say(f"injection spans {b:,}/{len(todo):,} ({time.perf_counter() - start:.0f} s)")
    writers.close()
    if rebuild:
        with store.connect(autocommit=True) as conn:
            t = time.perf_counter()
            conn.exec_driver_sql("VACUUM FULL chunks")
            say(f"VACUUM FULL chunks: {time.perf_counter() - t:.1f} s")
            deferred_indexes.build(conn, maintenance_work_mem=maintenance_work_mem, log=say)
            conn.exec_driver_sql("ANALYZE chunks")
    return time.perf_counter() - start


def _fill_page(store: KnowledgeStore, ids_: list[str]) -> None:
    with store.transaction() as conn:
        synonyms.fill(conn, entity_ids=ids_)


def fill_synonyms(store: KnowledgeStore, scope: str, entity_ids: list[str] | None = None, *,
                  workers: int = 1, log: Any = None) -> float:
    """Compute the synonym edges an ingest computes batch by batch (storage.synonyms) for
    the entities of ``scope`` that have none yet; seconds taken. With ``entity_ids`` (the
    scope's entities) they are computed a page at a time by ``workers`` threads first."""
    say = log or (lambda *_: None)
    start = time.perf_counter()
    if entity_ids:
        ordered = sorted(entity_ids)
        writers = _Writers(workers)
        for n, (a, b) in enumerate(_batches(len(ordered), synonyms.PAGE)):
            writers.submit(_fill_page, store, ordered[a:b])
            if n % 100 == 99:
                say(f"synonyms {b:,}/{len(ordered):,} ({time.perf_counter() - start:.0f} s)")
        writers.close()
    with store.transaction() as conn:  # whatever is left (none after the pages)
        synonyms.fill(conn, scope_names=[scope])
    return time.perf_counter() - start


def rebuild(store: KnowledgeStore, log: Any = None) -> dict[str, float]:
    """(Re)create the load indexes with bulk-build settings; seconds per index."""
    say = log or (lambda *_: None)
    out: dict[str, float] = {}
    with store.connect(autocommit=True) as conn:
        conn.exec_driver_sql("SET maintenance_work_mem = '1GB'")
        conn.exec_driver_sql("SET max_parallel_maintenance_workers = 2")
        conn.exec_driver_sql("SET statement_timeout = 0")
        for name, ddl in LOAD_INDEXES.items():
            t = time.perf_counter()
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
            conn.exec_driver_sql(ddl)
            out[f"index_{name}_s"] = time.perf_counter() - t
            say(f"index {name}: {out[f'index_{name}_s']:.1f} s")
        conn.exec_driver_sql("RESET maintenance_work_mem")
        conn.exec_driver_sql("RESET max_parallel_maintenance_workers")
    return out


# -- queries -----------------------------------------------------------------------------------
_QUESTION = ["How does {a} relate to {b}?", "What does {a} use {b} for?",
             "Is {a} connected to {b}?", "Explain the link between {a} and {b}"]
_NAME_FORMS = ["{n}", "What is {n}?", "Tell me about {n}", "{n}"]
_SUMMARY_FORMS = ["{w1} {w2}", "Which systems handle {t}?", "{t} in {d}",
                  "tools for {t} and {t2}"]
_PRONOUNCEABLE = "aeionrstl"


def _distinctive_word(name: str) -> str:
    words = [w.strip(".&") for w in name.split()]
    words = [w for w in words if len(w) >= 4 and w not in ORG_SUFFIX and w not in TECH_WORD]
    return max(words, key=len) if words else name.split()[0]


def generate_queries(graph: SyntheticGraph, n: int = 240, seed: int | None = None
                     ) -> list[BenchQuery]:
    """``n`` queries spread evenly over :data:`QUERY_KINDS` (round robin), seeded."""
    rng = random.Random(graph.seed + 1000 if seed is None else seed)
    ents, rels = graph.entities, graph.relations
    out: list[BenchQuery] = []
    for i in range(n):
        kind = QUERY_KINDS[i % len(QUERY_KINDS)]
        e = rng.choice(ents)
        if kind == "exact":
            out.append(BenchQuery(kind, rng.choice(_NAME_FORMS).format(n=e.name), e.type,
                                  (e.name,)))
        elif kind == "typo":
            words = e.name.split()
            j = max(range(len(words)), key=lambda k: len(words[k]))
            words[j] = typo(words[j], rng)
            out.append(BenchQuery(kind, " ".join(words), e.type, (e.name,)))
        elif kind == "partial":
            multi = [x for x in rng.sample(ents, 20) if len(x.name.split()) > 1] or [e]
            out.append(BenchQuery(kind, _distinctive_word(multi[0].name), multi[0].type))
        elif kind == "multiword":
            r = rng.choice(rels) if rels else None
            a, b = (ents[r.subject].name, ents[r.object].name) if r else (e.name, e.name)
            out.append(BenchQuery(kind, rng.choice(_QUESTION).format(a=a, b=b), "relation",
                                  (a, b)))
        elif kind == "summary":
            w1, w2 = rng.sample(CONCEPT_NOUN + ["data", "system", "pipeline", "platform"], 2)
            t, t2 = rng.sample(TOPICS, 2)
            out.append(BenchQuery(kind, rng.choice(_SUMMARY_FORMS).format(
                w1=w1, w2=w2, t=t, t2=t2, d=rng.choice(DOMAINS)), "vocabulary"))
        else:
            if rng.random() < 0.5:
                words = ["".join(rng.choice(string.ascii_lowercase)
                                 for _ in range(rng.randint(5, 9)))
                         for _ in range(rng.randint(1, 2))]
                variant = "random-letters"
            else:  # common trigrams, no real word: the LIKE worst case
                words = ["".join(rng.choice(_PRONOUNCEABLE) for _ in range(rng.randint(6, 9)))
                         for _ in range(rng.randint(1, 2))]
                variant = "common-letters"
            out.append(BenchQuery(kind, " ".join(words), variant))
    ask = random.Random((graph.seed if seed is None else seed) + 2000)  # texts stay as they were
    return [BenchQuery(q.kind, " ".join(q.text.split()), q.variant, q.targets,
                       " ".join(_question(q, ask).split())) for q in out]


_ASK_NAME = ["What is {n}?", "What is {n} used for?", "Who works with {n}?",
             "What does {n} depend on?", "Tell me about {n}."]
_ASK_WORD = ["Which projects are called {w}?", "What do we know about {w}?",
             "Where is {w} mentioned?"]
_ASK_TOPIC = ["Which tools are used for {t}?", "What supports {t}?",
              "Who works on {t}?"]


def _question(q: BenchQuery, rng: random.Random) -> str:
    """``q`` asked as a natural question (a question already stays as it is)."""
    if q.text.endswith("?"):
        return q.text
    if q.kind == "multiword":  # "Explain the link between A and B"
        return f"{q.text}."
    if q.kind in ("exact", "typo"):
        name = q.text.removeprefix("Tell me about ")
        return rng.choice(_ASK_NAME).format(n=name)
    if q.kind in ("partial", "nomatch"):
        return rng.choice(_ASK_WORD).format(w=q.text)
    return rng.choice(_ASK_TOPIC).format(t=q.text)
