"""Sentence-level evidence: a fact for every pair of entities one parsed sentence names.

The fact's text is the sentence. Its predicate is the verb phrase that connects the two
mentions in spaCy's dependency parse (their lowest common ancestor, when it is a verb, with
its auxiliaries, negation, particle and the preposition leading to the object: "was founded
by", "did not join", "was born in"); the mention on the verb's subject side becomes the
subject. When neither is on the subject side (two objects or adjuncts of one verb: "Virginia
is bordered by Maryland ... by North Carolina"), the subject is a date, or a mention sits
inside another verb's clause (a participle, a relative clause: another verb on its path to
the connecting one), the verb does not relate the pair and it gets no predicate, unless the
object hangs on a verb coordinated with or controlled by the connecting one, which shares
its subject and gives the predicate ("X worked at A and later co-founded B":
"co-founded"). Without a connecting verb (a list, an apposition, "X of Y") the predicate is
the generic ``relates_to``, subject and object in reading order.

Confidence says how likely such a pair is to be a real relation, never more than a pattern
(0.7-0.8) or an LLM (usually 0.8-0.9) claims (:func:`pair_confidence`): a place or
nationality and another typed entity of one sentence :data:`PLACE_CONFIDENCE` (0.66, the
most precise kind); a person and an organisation or a work joined by a verb, or a name and
the date in the parenthesis right after it ("Ada Roth (1901 – 1980)"),
:data:`PAIR_CONFIDENCE` (0.6, kept at the default threshold); the rest
:data:`COOCCURRENCE_CONFIDENCE` (0.45, kept only when ``min_confidence`` is lowered): other
dates, untyped capitalised phrases, two people, organisations or nationalities, and two
items of one list ("X, Y and Z": a ``conj`` link on the dependency path between them)
except in the text's opening sentence. Measured on Re-DocRED dev (first 100 documents):
the kinds of the ends, a list between them and the opening sentence separate true from
chance pairs; the length of the dependency path does not (rating long paths lower lost
more true pairs than false ones).

Coreference and document-level links, the simplest rules: a He/She/It/They subject of the
main verb or a sentence-initial His/Her/Its/Their stands for the previous sentence's
subject (:func:`sentence_subject`); the text's first subject (its topic) is paired with the
mentions of later sentences that do not name it (:func:`topic_confidence`); a place is
paired with the places of earlier sentences (:func:`place_evidence`), and the places of the
opening sentence with the organisations and people of later ones
(:func:`opening_evidence`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graph_flows.indexing.extraction.rule_mentions import Mention

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

PAIR_CONFIDENCE = 0.6
COOCCURRENCE_CONFIDENCE = 0.45
TOPIC_CONFIDENCE = 0.6
PLACE_CONFIDENCE = 0.66
GENERIC_PREDICATE = "relates_to"
PRONOUNS = frozenset({"he", "she", "it", "they"})
POSSESSIVES = frozenset({"his", "her", "its", "their"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass"})
_VERB_PARTS = frozenset({"aux", "auxpass", "neg", "prt"})
_SHARED = frozenset({"conj", "xcomp"})
"""Links from a verb to one that shares its subject (coordination, control)."""


@dataclass(frozen=True)
class Evidence:
    """A pair of mentions of one sentence, oriented, with its predicate and confidence."""

    subject: Mention
    object: Mention
    predicate: str
    confidence: float


def mention_root(doc: Doc, mention: Mention) -> Token | None:
    """The syntactic head token of a mention in its sentence's parse."""
    span = doc.char_span(mention.start, mention.end, alignment_mode="expand")
    return span.root if span is not None and len(span) else None


def sentence_evidence(doc: Doc, mentions: list[Mention],
                      opening: bool = False) -> Iterator[Evidence]:
    """Evidence for every pair of distinct mentions of one parsed sentence, reading order;
    in the text's ``opening`` sentence, items of a list are not rated lower (it defines its
    topic: "X is a German company with plants in A, B and C")."""
    roots = [mention_root(doc, m) for m in mentions]
    for i, left in enumerate(mentions):
        for j in range(i + 1, len(mentions)):
            right = mentions[j]
            if left.name.casefold() == right.name.casefold():
                continue
            yield _evidence(left, right, roots[i], roots[j], opening)


def _evidence(left: Mention, right: Mention, lroot: Token | None,
              rroot: Token | None, opening: bool = False) -> Evidence:
    """Orient a pair, name its connecting verb phrase if the parse has one, and rate it
    (:func:`pair_confidence`)."""
    kinds = (_kind(left, lroot), _kind(right, rroot))
    if lroot is not None and kinds[1] == "date" and _in_parenthesis_after(lroot.doc, left,
                                                                          right):
        return Evidence(left, right, GENERIC_PREDICATE, PAIR_CONFIDENCE)
    if lroot is None or rroot is None or lroot == rroot:
        return Evidence(left, right, GENERIC_PREDICATE, pair_confidence(kinds))
    lpath, rpath = _path_up(lroot), _path_up(rroot)
    common = next((t for t in lpath if t in rpath), None)
    listed = not opening and common is not None and _listed(lpath, rpath, common)
    if common is None or common.pos_ not in ("VERB", "AUX") or common in (lroot, rroot):
        return Evidence(left, right, GENERIC_PREDICATE,
                        pair_confidence(kinds, listed=listed))
    lside = lpath[lpath.index(common) - 1]
    rside = rpath[rpath.index(common) - 1]
    confidence = pair_confidence(kinds, verb=True, listed=listed)
    if rside.dep_ in _SUBJECTS and lside.dep_ not in _SUBJECTS:
        left, right, lpath, rpath = right, left, rpath, lpath
        kinds = (kinds[1], kinds[0])
    verb = _object_verb(rpath, common)
    if (kinds[0] == "date" or verb is None or _verbs_between(lpath, common)
            or lpath[lpath.index(common) - 1].dep_ not in _SUBJECTS):
        first, second = (right, left) if kinds[0] == "date" else (left, right)
        return Evidence(first, second, GENERIC_PREDICATE, confidence)
    return Evidence(left, right, _verb_phrase(verb, rpath[rpath.index(verb) - 1]), confidence)


def _verbs_between(path: list[Token], verb: Token) -> list[Token]:
    """The verbs between a mention and ``verb`` on its way up the parse, lowest first."""
    return [t for t in path[1 : path.index(verb)] if t.pos_ == "VERB"]


def _object_verb(path: list[Token], common: Token) -> Token | None:
    """The verb the object side's mention hangs on: ``common``, or the lowest verb between
    them when a chain of coordinated or controlled verbs ties it to ``common`` ("X worked at
    A and later co-founded B", "X decided to join B": they share the subject); None when
    the mention sits in another clause (a participle, a relative clause)."""
    verbs = _verbs_between(path, common)
    if not verbs:
        return common
    chain = path[path.index(verbs[0]) : path.index(common)]
    return verbs[0] if all(t.pos_ == "VERB" and t.dep_ in _SHARED for t in chain) else None


def _in_parenthesis_after(doc: Doc, name: Mention, date: Mention) -> bool:
    """True when ``date`` stands in a parenthesis opened right after ``name`` ("Ada Roth
    (born 3 May 1901)", "Ada Roth (1901 – 1980)"): the name's own dates."""
    between = doc.text[name.end : date.start]
    return between.lstrip().startswith("(") and ")" not in between and between.count("(") == 1


def pair_confidence(kinds: tuple[str, str], *, verb: bool = False,
                    listed: bool = False) -> float:
    """How likely two mentions of one sentence are related, from the kinds of their ends
    (:func:`_kind`), whether a verb connects them and whether they are items of one list:
    :data:`PLACE_CONFIDENCE` for a place and a typed entity, :data:`PAIR_CONFIDENCE` for a
    person and an organisation or a work joined by a verb, :data:`COOCCURRENCE_CONFIDENCE`
    otherwise, and always for a date, an untyped phrase or items of a list."""
    pair = set(kinds)
    if listed or "date" in pair or "phrase" in pair or pair == {"nationality"}:
        return COOCCURRENCE_CONFIDENCE
    if pair & {"location", "nationality"}:
        return PLACE_CONFIDENCE
    if verb and "person" in pair and pair & {"organization", "concept"}:
        return PAIR_CONFIDENCE
    return COOCCURRENCE_CONFIDENCE


def topic_confidence(topic: str, other: str) -> float:
    """How likely the text's topic (its first subject) relates to an entity of a later
    sentence: :data:`TOPIC_CONFIDENCE` for a person's place, organisation or work, a place's
    place, or the person of an organisation or a work; :data:`COOCCURRENCE_CONFIDENCE` for
    dates, untyped phrases and the rest (an organisation's places were mostly chance)."""
    if "date" in (topic, other) or "phrase" in (topic, other):
        return COOCCURRENCE_CONFIDENCE
    if topic == "person" and other in ("location", "organization", "concept"):
        return TOPIC_CONFIDENCE
    if topic == other == "location" or (other == "person" and topic in ("organization",
                                                                         "concept")):
        return TOPIC_CONFIDENCE
    return COOCCURRENCE_CONFIDENCE


def _listed(lpath: list[Token], rpath: list[Token], common: Token) -> bool:
    """True when the two mentions are items of one coordination ("X, Y and Z"): a ``conj``
    link lies on the dependency path between them."""
    below = lpath[: lpath.index(common)] + rpath[: rpath.index(common)]
    return any(t.dep_ == "conj" for t in below)


def _kind(mention: Mention, root: Token | None) -> str:
    """The mention's entity type; "date" for a date; "nationality" for a people's adjective
    ("German"), which stands for a place but rarely relates to another one; "phrase" for a
    capitalised phrase that NER did not take for an entity and no cue word typed
    ("President", "Fresh")."""
    if root is not None and root.ent_type_ in ("DATE", "TIME"):
        return "date"
    if root is not None and root.ent_type_ == "NORP" and mention.type == "location":
        return "nationality"
    if mention.type == "concept" and (root is None or not root.ent_type_):
        return "phrase"
    return mention.type


def _path_up(token: Token) -> list[Token]:
    """The token and its ancestors up to the sentence root."""
    path = [token]
    while path[-1].head != path[-1]:
        path.append(path[-1].head)
    return path


def _verb_phrase(verb: Token, object_side: Token) -> str:
    """The verb with its auxiliaries, negation and particle, then the preposition (or
    agent "by") through which the object hangs on it, also when it stands before the verb
    ("In 1970 Codd published ..." -> "published in")."""
    words = sorted((t for t in verb.children if t.dep_ in _VERB_PARTS), key=lambda t: t.i)
    words = [*(t for t in words if t.i < verb.i), verb, *(t for t in words if t.i > verb.i)]
    if object_side.dep_ in ("prep", "agent", "dative"):
        words.append(object_side)
    return " ".join(t.text for t in words).lower()


def sentence_subject(doc: Doc, mentions: list[Mention]) -> Mention | None:
    """The mention that is the grammatical subject of the sentence's main verb, if any."""
    for mention in mentions:
        root = mention_root(doc, mention)
        if root is not None and root.dep_ in _SUBJECTS and root.head.dep_ == "ROOT":
            return mention
    return None


def leading_pronoun(doc: Doc) -> Token | None:
    """A He/She/It/They that is the subject of the sentence's main verb ("In 1998 he
    won ..."), or a sentence-initial His/Her/Its/Their ("His son ...")."""
    if len(doc) and doc[0].lower_ in POSSESSIVES and doc[0].dep_ == "poss":
        return doc[0]
    for token in doc:
        if token.lower_ in PRONOUNS and token.dep_ in _SUBJECTS and token.head.dep_ == "ROOT":
            return token
    return None


def evidence_with_coreference(
    doc: Doc, mentions: list[Mention], previous: Mention | None, topic: Mention | None = None,
    opening: bool = False,
) -> tuple[list[Evidence], Mention | None]:
    """Evidence of one sentence, a leading pronoun standing for ``previous`` (the last
    sentence's subject), and the subject this sentence hands on to the next one. With a
    ``topic`` (the text's first subject) absent from the sentence, each mention is also
    paired with the topic, without a predicate."""
    pronoun = leading_pronoun(doc)
    if pronoun is not None and previous is not None:
        end = pronoun.idx + len(pronoun.text)
        mentions = [Mention(previous.name, pronoun.idx, end, previous.type,
                            previous.confidence), *mentions]
    found = list(sentence_evidence(doc, mentions, opening))
    if topic is not None and all(m.name.casefold() != topic.name.casefold() for m in mentions):
        found.extend(_topic_evidence(doc, topic, mentions))
    subject = sentence_subject(doc, mentions)
    if subject is None and pronoun is not None:
        subject = previous
    return found, subject


def place_kinds(doc: Doc, mentions: list[Mention]) -> list[tuple[Mention, str]]:
    """The places among a sentence's mentions, with their kind (:func:`_kind`)."""
    kinds = [(m, _kind(m, mention_root(doc, m))) for m in mentions if m.type == "location"]
    return [(m, kind) for m, kind in kinds if kind in ("location", "nationality")]


def place_evidence(places: list[tuple[Mention, str]],
                   here: list[tuple[Mention, str]]) -> Iterator[Evidence]:
    """Each place of a sentence (``here``, from :func:`place_kinds`) paired with the places of
    earlier sentences (``places``) that the sentence does not name, without a predicate, at
    :data:`PAIR_CONFIDENCE`: places named in one text mostly contain one another (a town,
    its region, its country); two nationalities are not paired."""
    names = {m.name.casefold() for m, _ in here}
    for mention, kind in here:
        for place, other in places:
            if place.name.casefold() in names or kind == other == "nationality":
                continue
            anchor = Mention(place.name, mention.start, mention.end, place.type,
                             place.confidence)
            yield Evidence(anchor, mention, GENERIC_PREDICATE, PAIR_CONFIDENCE)


def opening_evidence(opening: list[tuple[Mention, str]],
                     mentions: list[Mention]) -> Iterator[Evidence]:
    """The places of the text's opening sentence (``opening``, from :func:`place_kinds`)
    paired with the organisations and people of a later sentence that does not name them,
    without a predicate, at :data:`PAIR_CONFIDENCE`: the opening sentence places the text's
    subject, and what the text goes on to name mostly belongs there."""
    names = {m.name.casefold() for m in mentions}
    for mention in mentions:
        if mention.type not in ("organization", "person"):
            continue
        for place, _ in opening:
            if place.name.casefold() not in names:
                anchor = Mention(place.name, mention.start, mention.end, place.type,
                                 place.confidence)
                yield Evidence(anchor, mention, GENERIC_PREDICATE, PAIR_CONFIDENCE)


def _topic_evidence(doc: Doc, topic: Mention, mentions: list[Mention]) -> Iterator[Evidence]:
    """The topic paired with every mention of a sentence that does not name it."""
    for mention in mentions:
        root = mention_root(doc, mention)
        kind = _kind(mention, root)
        confidence = topic_confidence(topic.type, "location" if kind == "nationality" else kind)
        anchor = Mention(topic.name, mention.start, mention.end, topic.type, topic.confidence)
        yield Evidence(anchor, mention, GENERIC_PREDICATE, confidence)
