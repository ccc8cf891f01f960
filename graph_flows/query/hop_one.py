"""Where a multi-hop question's chain starts, and which entity leads on from there (pure
functions; the spaCy parse when installed).

**Hop-1 passages.** A multi-hop question names the thing its chain starts from ("Who was the
first president of the association which published *Journal of Psychotherapy Integration*?")
and retrieval nearly always finds that thing's own passage. A round-1 passage belongs to a
named thing (:func:`belongs`) when its title, without a trailing parenthesis ("Hello Love
(song)"), says the same words as the name, or when its text opens with the name (the
subject of an encyclopedic first sentence: corpora without titles); a title must say a whole
name of the question (a run of its capitalised words, or a name of its analysis) and
nothing the question does not name ("Review" is not the "Arden Review"). At most
:data:`MAX_HOPS` such passages, one per named thing (a comparison names two).

**The bridge.** The entity the next hop is about is one the hop-1 passage mentions and the
question does not name ("American Psychological Association"), and the passage says it in
the question's relation ("... journal *published* by the American Psychological
Association": the question asks about the association which *published* it). Each
candidate (:func:`candidates`) is scored by how closely the passage ties it to a relation
word of the question (:func:`graph_flows.query.confidence.relation_words`: same stem): 1 /
the length of the dependency path between the mention and the word in spaCy's parse
(without the pipeline, 1 / the words between them); 0 when no sentence saying it holds a
relation word. The follow-up (graph_flows.query.second_hop) adds how well the candidate's own
passages match the question before it chooses.

Why this should hold on other text: a passage about X states X's relations as predicate and
argument, which is what a dependency parse links; the question's relation words are read
from the question itself, with the same crude stem as the answer's checks (no list of
relation words of any dataset); titles and lead subjects are how encyclopedic and most
reference text name what a passage is about.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graph_flows.query import extractive
from graph_flows.shared.fragments import is_fragment, is_number

MAX_HOPS = 2  # hop-1 passages followed (one per named thing)
MAX_CANDIDATES = 6  # candidates per hop-1 passage whose passages the follow-up reads
_PAREN = re.compile(r"\s*\([^()]*\)\s*$")
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_NAME_TOKEN = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)
_UNUSED = ("ner", "tagger", "attribute_ruler")  # the parse needs tok2vec and parser only
_CONNECTORS = frozenset({"of", "the", "and", "for", "de", "von", "van", "du", "la", "&"})


@dataclass(frozen=True)
class HopOne:
    """A round-1 passage (its row) that belongs to a thing the question names (``name``: its
    title), and how (``by``: "title" or "lead")."""

    passage: Mapping[str, Any]
    name: str
    by: str


@dataclass(frozen=True)
class Candidate:
    """An entity a hop-1 passage mentions: its id and name, ``link`` (0..1, see the module
    docstring) and ``why`` (the relation word and path that gave it)."""

    id: str
    name: str
    link: float
    why: str


def stems(text: str) -> frozenset[str]:
    """Content-word stems of two letters or more (the "s" of "Love's" is none), accents
    folded ("Aschenbrödel" and "Aschenbrodel" are one name)."""
    flat = "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))
    return frozenset(s for s in extractive.terms(flat) if len(s) > 1)


def named_phrases(query: str, names: Iterable[str]) -> list[frozenset[str]]:
    """The stems of each name ``query`` says: each run of capitalised words or numbers
    (joined across "of", "the", "and", ...; the first word too unless a function word) and
    each of the analysis' ``names``."""
    runs: list[list[str]] = [[]]
    tokens = _NAME_TOKEN.findall(query)
    for i, token in enumerate(tokens):
        capital = token[0].isupper() or token[0].isdigit()
        if capital and (i or token.casefold() not in extractive.STOP_WORDS):
            runs[-1].append(token)
        elif not (token.casefold() in _CONNECTORS and runs[-1] and i + 1 < len(tokens)
                  and tokens[i + 1][0].isupper()):
            runs.append([])
    phrases = [stems(" ".join(r)) for r in runs] + [stems(n) for n in names]
    return list(dict.fromkeys(p for p in phrases if p))


def belongs(passage: Mapping[str, Any], phrases: Sequence[frozenset[str]],
            names: Sequence[str]) -> str | None:
    """"title" when ``passage``'s title (without a trailing parenthesis) says a whole name
    of the question (one of ``phrases``) and no word the question does not name; "lead"
    when its text (after the title) opens with one of ``names``; else None."""
    title = str(passage.get("title") or "")
    core = stems(_PAREN.sub("", title))
    named = frozenset().union(*phrases)
    if core and core <= named and any(p <= core for p in phrases):
        return "title"
    text = " ".join(str(passage.get("text") or "").split())
    text = text[len(title):].lstrip() if title and text.startswith(title) else text
    lead = text[:200].casefold()
    for name in names:
        flat = " ".join(name.split()).casefold()
        if stems(flat) and (lead.startswith(flat) or lead.removeprefix("the ").startswith(flat)):
            return "lead"
    return None


def hop_one_passages(query: str, names: Sequence[str], passages: Sequence[Mapping[str, Any]],
                     limit: int = MAX_HOPS) -> list[HopOne]:
    """The first ``limit`` round-1 ``passages`` (in their order) that belong to a thing the
    question names (:func:`belongs`), one per thing and per document (a passage whose
    title's words overlap a taken one's is about the same thing)."""
    phrases = named_phrases(query, names)
    out: list[HopOne] = []
    taken: list[frozenset[str]] = []
    documents: set[Any] = set()
    for p in passages:
        if len(out) >= limit:
            break
        doc = p.get("document_id") or p.get("uri") or p.get("id")
        about = stems(_PAREN.sub("", str(p.get("title") or "")))
        if doc in documents or any(about & t for t in taken):
            continue
        by = belongs(p, phrases, names)
        if by:
            out.append(HopOne(p, str(p.get("title") or ""), by))
            taken.append(about)
            documents.add(doc)
    return out


def covered(hops: Sequence[HopOne]) -> frozenset[str]:
    """The stems the hop-1 passages say (title and text)."""
    return frozenset().union(*(extractive.terms(
        f"{h.passage.get('title') or ''} {h.passage.get('text') or ''}") for h in hops))


def candidates(hop: HopOne, entities: Sequence[Mapping[str, Any]], q: extractive.Question,
               relation: frozenset[str], limit: int = MAX_CANDIDATES) -> list[Candidate]:
    """The entities (``id``, ``name``, ``aliases``) the hop-1 passage mentions that may be
    the bridge (:func:`mentions`), best ``link`` first (ties: earlier in the passage), at
    most ``limit`` (:func:`linked`)."""
    return linked(hop, mentions(hop, entities, q), relation, limit)


def mentions(hop: HopOne, entities: Sequence[Mapping[str, Any]], q: extractive.Question,
             ) -> list[tuple[int, str, Candidate]]:
    """(offset, the name said, candidate without a link) of each entity the hop-1 passage
    says that may be the bridge: not named by the question or the passage's title, not a
    number, date, fragment or lower-case common noun (string tests only, no parse)."""
    text = str(hop.passage.get("text") or "")
    own = stems(_PAREN.sub("", str(hop.passage.get("title") or "")))
    folded = text.casefold()
    found: list[tuple[int, str, Candidate]] = []
    seen: set[str] = set()
    for e in entities:
        name = str(e.get("name") or "")
        s = stems(name)
        if not s or s <= q.all or s <= own or name.casefold() in seen \
                or is_fragment(name) or is_number(name) or not _has_word(name):
            continue
        at = _position(folded, [name, *(e.get("aliases") or ())])
        if at is None:
            continue
        seen.add(name.casefold())
        found.append((at[0], at[1], Candidate(str(e["id"]), name, 0.0, "")))
    return found


def linked(hop: HopOne, found: Sequence[tuple[int, str, Candidate]],
           relation: frozenset[str], limit: int = MAX_CANDIDATES,
           parsed: Mapping[int, Any] | None = None) -> list[Candidate]:
    """The :func:`mentions` ``found`` scored by their link to ``relation`` (the parse;
    ``parsed``: the passage's sentences parsed beforehand, :func:`parse`), not said as an
    adjective, best link first (ties: earlier), at most ``limit``."""
    text = str(hop.passage.get("text") or "")
    link = links(text, [(said, at) for at, said, _ in found], relation, parsed)
    scored = [(link[i][0], at, Candidate(c.id, c.name, link[i][0], link[i][1]))
              for i, (at, _, c) in enumerate(found) if link[i][0] >= 0]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [c for _, _, c in scored[:limit]]


def _has_word(name: str) -> bool:
    """A name: a capitalised word of two letters or more (a common noun such as "film",
    which an extractor may store as an entity, names no thing to follow) and no number
    (dates have digits)."""
    words = _TOKEN.findall(name)
    return any(len(w) > 1 and w.isalpha() and w[0].isupper() for w in words) and not any(
        w.isdigit() for w in words)


def _position(folded: str, names: Iterable[str]) -> tuple[int, str] | None:
    """(offset, name) of the earliest of ``names`` in ``folded`` (None: none occurs)."""
    places = [(folded.find(n.casefold()), n) for n in names if n and n.strip()]
    places = [p for p in places if p[0] >= 0]
    return min(places) if places else None


def parse(text: str, relation: frozenset[str], within: Sequence[int] | None = None,
          ) -> dict[int, Any]:
    """Each sentence of ``text`` that says a word of ``relation`` (of those starting at
    ``within`` when given), parsed (sentence offset -> spaCy doc; empty without the
    parser): what :func:`links` reads, parsed before the mentions are known when the
    follow-up parses while its first statement runs."""
    from graph_flows.shared.nlp import use_pipeline_ops

    nlp, skip = _parser()
    if nlp is None or not relation:
        return {}
    said = [(start, sentence) for start, sentence in _sentences(text)
            if (within is None or start in within) and _relation_words(sentence, relation)]
    # one batch: spaCy's per-call overhead is most of a short sentence's parse (measured
    # here: 20 ms a sentence called one by one, 2 ms in a batch; the same parse)
    use_pipeline_ops()  # the pipeline's thinc ops, not looked up again in this thread
    docs = nlp.pipe([sentence for _, sentence in said], disable=skip)
    return {start: doc for (start, _), doc in zip(said, docs, strict=True)}


def _parser() -> tuple[Any, list[str]]:
    """The spaCy pipeline (None without it) and the pipes the parse does not need."""
    from graph_flows.shared.nlp import load_nlp

    nlp = load_nlp()
    return nlp, [p for p in _UNUSED if nlp is not None and p in nlp.pipe_names]


def _relation_words(sentence: str, relation: frozenset[str]) -> list[re.Match[str]]:
    return [m for m in _TOKEN.finditer(sentence) if extractive.stem(m.group()) in relation]


def links(text: str, mentions: Sequence[tuple[str, int]], relation: frozenset[str],
          parsed: Mapping[int, Any] | None = None) -> list[tuple[float, str]]:
    """(link, why) of each ``(name, offset)`` mention in ``text``: 1 / the shortest
    dependency path (or word distance without the parser) from the mention to a word of
    ``relation`` (stems) in the mention's sentence; (0, why) when none. ``parsed``: the
    sentences already parsed (:func:`parse`), by offset."""
    none = (0.0, "no relation word of the question in its sentence")
    out = [none] * len(mentions)
    if not relation or not mentions:
        return out
    if parsed is None:  # the sentences that hold a mention, parsed in one batch
        parsed = parse(text, relation, [start for start, sentence in _sentences(text) if any(
            start <= at < start + len(sentence) for _, at in mentions)])
    for start, sentence in _sentences(text):
        words = _relation_words(sentence, relation)
        inside = [i for i, (_, at) in enumerate(mentions)
                  if start <= at < start + len(sentence)]
        if not words or not inside:
            continue
        doc = parsed.get(start)
        for i in inside:
            name, at = mentions[i]
            found = _link(doc, sentence, at - start, len(name), words)
            if found is not None and (found[0] > out[i][0] or found[0] < 0):
                out[i] = found
    return out


def _sentences(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) of each sentence of ``text``."""
    out: list[tuple[int, str]] = []
    start = 0
    for part in extractive.SENTENCE_BREAK.split(text):
        at = text.find(part, start)
        if part.strip():
            out.append((at, part))
        start = at + len(part)
    return out


def _link(doc: Any, sentence: str, at: int, length: int,
          words: Sequence[re.Match[str]]) -> tuple[float, str] | None:
    """(1 / path length, why) from the mention at ``at`` to the nearest relation word."""
    best: tuple[float, str] | None = None
    span = doc.char_span(at, at + length, alignment_mode="expand") if doc is not None else None
    if span is not None and span.root.dep_ == "amod":
        return (-1.0, "said as an adjective (it describes, it names nothing)")
    for w in words:
        if at <= w.start() < at + length:
            continue  # the mention's own word
        if span is not None:
            token = doc.char_span(w.start(), w.end(), alignment_mode="expand")
            if token is None:
                continue
            dist = _path(span.root, token.root)
            how = f"{dist} dependency link{'s' if dist > 1 else ''} from “{w.group()}”"
        else:
            gap = sentence[min(at + length, w.end()):max(at, w.start())]
            dist = len(_TOKEN.findall(gap)) + 1
            how = f"{dist} word{'s' if dist > 1 else ''} from “{w.group()}”"
        if dist > 0 and (best is None or 1 / dist > best[0]):
            best = (1 / dist, how)
    return best


def _path(a: Any, b: Any) -> int:
    """Edges on the dependency path between tokens ``a`` and ``b``."""
    up = {t.i: n for n, t in enumerate([a, *a.ancestors])}
    for n, t in enumerate([b, *b.ancestors]):
        if t.i in up:
            return n + up[t.i]
    return len(up) + n + 1
