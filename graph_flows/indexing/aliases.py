"""Short forms of a document's names: which earlier full name a later mention stands for.

Pure rules, no store (the resolution step, :mod:`graph_flows.indexing.resolve`, feeds them a
document's names in order). Writers introduce a thing by its full name and then shorten it;
the rules accept only the shortenings whose target is unique in the document, so two people
who share a surname are never joined by a bare surname:

1. **Acronym defined beside its expansion**: an all-capitals name (``ELAM``, ``PRC``) joins
   the one earlier name written right before or after it in parentheses
   ("Latin American School of Medicine (LASM)", "PRC (People's Republic of China)") whose
   letters it abbreviates (Schwartz & Hearst's test: the acronym's first letter starts a word
   of the expansion and its other letters follow in order). Nothing else makes an acronym an
   alias, so an acronym that is also a word ("IT", "US", "ACE") joins nothing unless the text
   defines it that way. The exceptions: an acronym of three or more letters without a
   vowel (it cannot be an English word: "PRC", "NCS"), and initials each followed by a
   period (an abbreviation as written: "U.S.", "D.C."), join the one name of the document
   whose capitalised words' initials they spell. Once defined, the acronym stands for that
   thing in the rest of the document.
2. **Person, shorter name**: a capitalised name whose words are an ordered part of an earlier
   person's name ending with the same last word joins it: "Robeson" and "Paul Robeson"
   -> "Paul Robeson"; "Henrik Angell" -> "Henrik August Angell". Generational suffixes
   ("Jr.", "III") are not a last word.
   A single word equal to the *first* word of one person's name joins it too (a first name,
   or a family name written first: "Zhou" -> "Zhou Enlai").
3. **Head of a longer name**: a capitalised name (a leading "the" dropped) equal to the last
   words of an earlier multi-word name that is not a person or a place joins it, a single
   word only where the text writes it as a definite description ("the Bee" -> "The
   Sacramento Bee", "the Commission" -> "Philippine Commission"; a bare "Germany" is not
   "United States Naval Forces Germany"). Places are left out, and so are names the
   extractor typed as places: "Columbia" is not "British Columbia".
4. **Legal form dropped**: "Atari" -> "Atari, Inc.", "Taito" -> "Taito Corporation"
   (:data:`LEGAL_FORMS`).
5. **Plural**: a name that is another non-person name of the document with or without a
   final "s"/"es" ("Protestants" and "Protestant", "Native Americans" and "Native
   American"), whichever the document writes first.

A rule that finds two or more different earlier things (two Smiths, two parliaments) joins
nothing. A name the document writes for a person, place or organisation and types as
another of the three elsewhere (the extractor reads "Jacob" as a person in one sentence and
an organisation in the next) is that thing.
Names that differ only by case, punctuation or diacritics are the same name for the
resolver's spelling-variant key (:func:`graph_flows.indexing.resolve.compact`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

_WORD = re.compile(r"[^\W_]+")
_ACRONYM = re.compile(r"[A-Z][A-Z0-9&.\-]*[A-Z0-9]\.?")
_DOTTED = re.compile(r"(?:[A-Z]\.){2,}")
GENERATIONAL = frozenset({"jr", "sr", "ii", "iii", "iv"})
VOWELS = frozenset("AEIOUY")
# Legal-form words ending a company or club name, dropped in later mentions ("Atari, Inc."
# -> "Atari")
LEGAL_FORMS = frozenset({"inc", "incorporated", "corp", "corporation", "co", "company", "ltd",
                         "limited", "llc", "plc", "gmbh", "ag", "sa", "nv", "bv", "spa",
                         "ab", "asa", "oy", "oyj", "fc", "afc", "il"})
MAX_ACRONYM = 10
CONFUSED_TYPES = frozenset({"person", "location", "organization"})
"""The types a name-recogniser confuses with each other depending on the sentence ("Jacob"
a person in one, an organisation in the next): within a document, one name typed as two of
them is one thing. A name typed as, say, a technology and an organisation more often names
two things (a product and the group behind it) and stays two."""


def fold(name: str) -> str:
    """Diacritics removed, casefolded, punctuation as spaces: "Mediaș" -> "medias". The
    spacing modifier letters (U+02B0-U+02FF) that transliterations write where English
    writes an apostrophe ("Qurʾān", "Yaʿqūb") are punctuation too: "Qurʾān" = "Qur'an"."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name))
    plain = "".join(" " if "\u02b0" <= c <= "\u02ff" else c
                    for c in decomposed if not unicodedata.combining(c))
    return " ".join(_WORD.findall(plain.casefold()))


def words(name: str) -> list[str]:
    """The folded words of a name, without a leading "the" or trailing "Jr."-like words."""
    out = fold(name).split()
    if len(out) > 1 and out[0] == "the":
        out = out[1:]
    while len(out) > 1 and out[-1] in GENERATIONAL:
        out = out[:-1]
    return out


def same_name_key(name: str) -> str:
    """Key of names that are one spelling: folded, a leading "the" dropped ("The Sacramento
    Bee" = "Sacramento Bee"; "Paul Desmarais Jr." stays apart from "Paul Desmarais")."""
    out = fold(name).split()
    return " ".join(out[1:] if len(out) > 1 and out[0] == "the" else out)


def is_acronym(name: str) -> bool:
    """All capitals (digits, "&", "." and "-" allowed), 2..10 characters: "ELAM", "U.S."."""
    letters = sum(c.isalpha() for c in name)
    return (2 <= len(name) <= MAX_ACRONYM and letters >= 2
            and _ACRONYM.fullmatch(name) is not None)


def abbreviates(acronym: str, expansion: str) -> bool:
    """Schwartz & Hearst: scanning both from the end, every letter or digit of the acronym
    is found in order in the expansion, the first one at the start of a word."""
    short = [c for c in fold(acronym) if c.isalnum()]
    long = fold(expansion)
    if not short or len(long.split()) < 2:
        return False
    j = len(long) - 1
    for i in range(len(short) - 1, -1, -1):
        while j >= 0 and (long[j] != short[i] or (i == 0 and j > 0 and long[j - 1] != " ")):
            j -= 1
        if j < 0:
            return False
        j -= 1
    return True


def defined_beside(acronym: str, expansion: str, text: str) -> bool:
    """``expansion (acronym)`` or ``acronym (expansion)`` occurs in ``text`` (spacing and
    the expansion's case free, the acronym's exact) and the acronym abbreviates it."""
    if not abbreviates(acronym, expansion):
        return False
    e = r"\s+".join(re.escape(w) for w in expansion.split())
    a = re.escape(acronym)
    pattern = rf"(?i:{e})\s*\(\s*{a}\s*\)|(?<!\w){a}\s*\(\s*(?i:(?:the\s+)?{e})\s*\)"
    return re.search(pattern, text) is not None


def _ordered_part(short: Sequence[str], full: Sequence[str]) -> bool:
    it = iter(full)
    return all(any(w == f for f in it) for w in short)


@dataclass
class Known:
    """One thing the document has named: its full name, type and every name seen for it."""

    name: str
    type: str
    names: list[str] = field(default_factory=list)
    types: set[str] = field(default_factory=set)
    """Every type the document's names of it were extracted with (``type`` and those of
    the same name typed otherwise)."""

    def __post_init__(self) -> None:
        self.types.add(self.type)


def _capitalised(name: str) -> bool:
    first = words(name)
    raw = name.split()
    if raw and raw[0].casefold() == "the" and len(raw) > 1:
        raw = raw[1:]
    return bool(first) and bool(raw) and raw[0][:1].isupper()


def _initials(expansion: str) -> str:
    """First letters of an expansion's capitalised words ("Communist Party of China" ->
    "CPC")."""
    return "".join(w[0] for w in expansion.replace("-", " ").split() if w[:1].isupper())


def dotted(acronym: str) -> bool:
    """Initials each followed by a period ("U.S.", "D.C.", "U.K."): written so, they are an
    abbreviation, never a word."""
    return _DOTTED.fullmatch(acronym) is not None


def acronym_matches(acronym: str, expansion: str, text: str) -> bool:
    """Rule 1 (module docstring): defined beside the expansion, or the expansion's initials
    spelled either without a vowel (so it cannot be an English word) and 3+ letters long,
    or with a period after each letter ("U.S.")."""
    if is_acronym(expansion) or len(expansion.split()) < 2:
        return False
    if defined_beside(acronym, expansion, text):
        return True
    letters = "".join(c for c in acronym if c.isalpha())
    return ((dotted(acronym) or (len(letters) >= 3 and not set(letters) & VOWELS))
            and _initials(expansion) == letters)


def _after_the(name: str, text: str) -> bool:
    """``name`` is written "the <name>", not followed by a capitalised word or a number
    (or begins with "the")."""
    if name.split()[0].casefold() == "the":
        return True
    # "the System" but not "the System R": the name must end the noun phrase
    return re.search(rf"\b[Tt]he\s+{re.escape(name)}\b(?!\s*[A-Z0-9])", text) is not None


def rule_matches(name: str, known: Known, text: str, type_: str = "") -> bool:
    """Whether ``name`` (of extracted type ``type_``) is a short form of ``known`` by the
    rules of the module docstring."""
    if is_acronym(name):
        return any(acronym_matches(name, n, text) for n in known.names)
    if not _capitalised(name):
        return False
    short = words(name)
    for full_name in known.names:
        full = words(full_name)
        if is_acronym(full_name):
            continue
        if "person" not in known.types and plural_of(short, full):
            return True
        if len(short) >= len(full):
            continue
        if "person" in known.types:
            if _ordered_part(short, full) and (
                    short[-1] == full[-1] or (len(short) == 1 and short[0] == full[0])):
                return True
        elif ("location" not in (*known.types, type_)
              and _names_thing(short, full, name, text)):
            return True
    return False


def plural_of(short: Sequence[str], full: Sequence[str]) -> bool:
    """Rule 5: the same name with or without a plural "s"/"es" ("Protestants" and
    "Protestant", "Native Americans" and "Native American")."""
    if len(short) != len(full) or not short or short[:-1] != full[:-1]:
        return False
    a, b = sorted((short[-1], full[-1]), key=len)
    return len(a) >= 3 and b in (a + "s", a + "es")


def _names_thing(short: list[str], full: list[str], name: str, text: str) -> bool:
    """Rules 3 and 4: the head of a longer name ("the Bee"; one word only after "the"), or
    the name without its legal form ("Atari" of "Atari, Inc.")."""
    if full[-len(short):] == short and (len(short) >= 2 or _after_the(name, text)):
        return True
    return full[:-1] == short and full[-1] in LEGAL_FORMS


class DocumentNames:
    """The names of one document so far, in reading order; answers which earlier thing a
    new name is a short form of (:func:`rule_matches`, unique target only)."""

    def __init__(self) -> None:
        self.known: list[Known] = []
        self._by_fold: dict[tuple[str, str], Known] = {}

    def add(self, name: str, type_: str) -> Known:
        """Record a full name (an earlier name of the same spelling and type is reused)."""
        key = (same_name_key(name), type_)
        hit = self._by_fold.get(key)
        if hit is None:
            hit = Known(name, type_, [name])
            self.known.append(hit)
            self._by_fold[key] = hit
        elif name not in hit.names:
            hit.names.append(name)
        return hit

    def short_form_of(self, name: str, type_: str, text: str,
                      whole: DocumentNames | None = None) -> Known | None:
        """The one earlier thing ``name`` shortens, or None (no rule, or two candidates).

        ``whole``: every name of the document, later ones included: a short form that could
        also stand for a thing named only later ("Desmarais" before "Jacqueline Desmarais"
        appears) is ambiguous too. A name already known as a full name of its own type is
        itself, not a short form; one spelled the same but for a leading "the" is that
        thing's. A name the document already wrote for a person, place or organisation
        typed as another of the three is that thing (:data:`CONFUSED_TYPES`)."""
        key = same_name_key(name)
        same = self._by_fold.get((key, type_))
        if same is not None:
            return same if fold(same.name) != fold(name) else None
        named = [k for k in self.known if k.name != name and any(
            same_name_key(n) == key for n in k.names[1:])]
        if len(named) == 1:  # already known as this thing's short form ("ELAM" again)
            return named[0]
        typed = [k for (spelled, t), k in self._by_fold.items()
                 if spelled == key and {t, type_} <= CONFUSED_TYPES]
        if len(typed) == 1:  # the same name typed otherwise elsewhere in the document
            return typed[0]
        hits = [k for k in self.known if rule_matches(name, k, text, type_)]
        if len(hits) != 1:
            return None
        if whole is not None and len(whole.distinct_targets(name, text, type_)) > 1:
            return None
        return hits[0]

    def distinct_targets(self, name: str, text: str, type_: str = "") -> list[Known]:
        """The things ``name`` may shorten, a candidate that itself shortens another
        candidate ("Henrik Angell" of "Henrik August Angell") counted with it."""
        hits = [k for k in self.known if rule_matches(name, k, text, type_)]
        return [k for k in hits if not any(
            other is not k and rule_matches(k.name, other, text) for other in hits)]

    def alias(self, target: Known, name: str, type_: str = "") -> None:
        """Remember ``name`` as another name of ``target``; a name spelled as the target's
        adds its ``type_`` to the target's types."""
        if name not in target.names:
            target.names.append(name)
        if type_ and same_name_key(name) == same_name_key(target.name):
            target.types.add(type_)
