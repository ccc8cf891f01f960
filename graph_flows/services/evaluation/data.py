"""Readers of the evaluation files (JSON lines): corpus passages, multihop questions and
Re-DocRED documents. Bad input raises :class:`EvalInputError` whose message is one line
naming the file, the line number and the field."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph_flows.services.errors import RequestError


class EvalInputError(RequestError):
    """An evaluation input file the user must fix; ``str()`` is one line."""


@dataclass(frozen=True)
class Passage:
    """One corpus passage: its id (kept as the document uri), title and text."""

    id: str
    title: str
    text: str

    @property
    def full_text(self) -> str:
        """What is indexed: ``title + " " + text``."""
        return f"{self.title} {self.text}".strip()


@dataclass(frozen=True)
class Hop:
    """One hop of a question's gold decomposition: its sub-question (``#1``-style references
    to earlier hops' answers), its answer and the passage that answers it."""

    question: str
    answer: str
    passage_id: str = ""


@dataclass(frozen=True)
class Question:
    """One multihop question with its answers, gold passage ids and (when the file gives
    one) its gold decomposition."""

    id: str
    question: str
    answers: tuple[str, ...]
    gold: tuple[str, ...]
    line: int = 0
    decomposition: tuple[Hop, ...] = ()


@dataclass(frozen=True)
class GoldEntity:
    """A Re-DocRED entity: names it may be called by, and its type (PER, ORG, ...)."""

    names: tuple[str, ...]
    type: str


@dataclass(frozen=True)
class GoldDocument:
    """A Re-DocRED document: text, entities, relations as (head, tail, Wikidata id)."""

    text: str
    entities: tuple[GoldEntity, ...]
    relations: tuple[tuple[int, int, str], ...]


def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSON-lines file."""
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"{path}: no such file")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise EvalInputError(f"{path}: cannot read as UTF-8 text ({err})") from err
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise EvalInputError(f"{path}:{number}: not a JSON object ({err.msg}); "
                                 "expected JSON lines") from err
        if not isinstance(obj, dict):
            raise EvalInputError(f"{path}:{number}: not a JSON object; expected JSON lines")
        yield number, obj


def field(path: Path, number: int, obj: dict[str, Any], name: str, kind: type | tuple[type, ...]
          = str) -> Any:
    """``obj[name]`` checked for presence and type; one-line error otherwise."""
    if name not in obj:
        raise EvalInputError(f"{path}:{number}: missing field '{name}'")
    value = obj[name]
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()
                                       and name != "title"):
        raise EvalInputError(f"{path}:{number}: field '{name}' is empty or of the wrong type")
    return value


def _non_empty(path: Path, items: list[Any], what: str) -> list[Any]:
    if not items:
        raise EvalInputError(f"{path}: no {what} in the file")
    return items


def read_corpus(path: Path) -> list[Passage]:
    """Passages ``{id, title, text}`` of a corpus file (ids must be unique)."""
    out: list[Passage] = []
    seen: set[str] = set()
    for number, obj in json_lines(path):
        pid = field(path, number, obj, "id")
        if pid in seen:
            raise EvalInputError(f"{path}:{number}: field 'id' repeats {pid!r}")
        seen.add(pid)
        out.append(Passage(pid, field(path, number, obj, "title"),
                           field(path, number, obj, "text")))
    return _non_empty(path, out, "passages")


def read_questions(path: Path) -> list[Question]:
    """Questions ``{id, question, answer, answer_aliases?, supporting_passage_ids,
    decomposition?}``."""
    out: list[Question] = []
    for number, obj in json_lines(path):
        text = field(path, number, obj, "question")
        answer = field(path, number, obj, "answer")
        aliases = obj.get("answer_aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise EvalInputError(f"{path}:{number}: field 'answer_aliases' must be a list of "
                                 "strings")
        gold = field(path, number, obj, "supporting_passage_ids", list)
        if not gold or not all(isinstance(g, str) for g in gold):
            raise EvalInputError(f"{path}:{number}: field 'supporting_passage_ids' must be a "
                                 "non-empty list of passage ids")
        qid = str(obj.get("id") or f"line-{number}")
        out.append(Question(qid, text, (answer, *[a for a in aliases if a.strip()]),
                            tuple(gold), number, _decomposition(path, number, obj)))
    return _non_empty(path, out, "questions")


def _decomposition(path: Path, number: int, obj: dict[str, Any]) -> tuple[Hop, ...]:
    """The optional ``decomposition``: a list of ``{question, answer, passage_id?}``."""
    hops = obj.get("decomposition") or []
    good = isinstance(hops, list) and all(
        isinstance(h, dict) and isinstance(h.get("question"), str) and h["question"].strip()
        and isinstance(h.get("answer"), str) and isinstance(h.get("passage_id", ""), str)
        for h in hops)
    if not good:
        raise EvalInputError(f"{path}:{number}: field 'decomposition' must be a list of "
                             "objects with a 'question' and an 'answer' (strings)")
    return tuple(Hop(h["question"], h["answer"], h.get("passage_id", "")) for h in hops)


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens joined into readable text ("Babbage 's" -> "Babbage's", "( 1815 )" -> "(1815)")."""
    text = " ".join(tokens)
    text = re.sub(r" ([.,;:!?%)\]}])", r"\1", text)
    text = re.sub(r"([(\[{$]) ", r"\1", text)
    text = re.sub(r" (['’]s|n't|['’]re|['’]ve|['’]ll|['’]d|['’]m)\b", r"\1", text)
    return re.sub(r"`` | ''", '"', text)


def _doc_text(path: Path, number: int, obj: dict[str, Any]) -> str:
    """The readable text: the detokenized ``sents`` when given, else ``text``."""
    sents = obj.get("sents")
    if isinstance(sents, list) and sents and all(isinstance(s, list) for s in sents):
        return " ".join(detokenize(s) for s in sents)
    return str(field(path, number, obj, "text"))


def check_gold(path: Path, questions: Sequence[Question], passage_ids: set[str]) -> None:
    """Every gold passage id of the questions must be a corpus passage."""
    for q in questions:
        missing = [g for g in q.gold if g not in passage_ids]
        if missing:
            raise EvalInputError(f"{path}:{q.line}: field 'supporting_passage_ids' names "
                                 f"{missing[0]!r}, which is not in the corpus")


def read_redocred(path: Path) -> list[GoldDocument]:
    """Documents of a Re-DocRED JSON-lines file (``text`` or ``sents``, ``entities``,
    ``relations``); a gold name also matches in its detokenized spelling."""
    out: list[GoldDocument] = []
    for number, obj in json_lines(path):
        text = _doc_text(path, number, obj)
        entities = []
        for ent in field(path, number, obj, "entities", list):
            if not isinstance(ent, dict) or not isinstance(ent.get("name"), str):
                raise EvalInputError(f"{path}:{number}: field 'entities' needs objects with "
                                     "a 'name'")
            names = [ent["name"], *(ent.get("aliases") or []),
                     *(m.get("name", "") for m in ent.get("mentions") or [])]
            names += [detokenize(n.split(" ")) for n in names]
            entities.append(GoldEntity(tuple(dict.fromkeys(n for n in names if n)),
                                       str(ent.get("type", ""))))
        relations = []
        for rel in field(path, number, obj, "relations", list):
            try:
                relations.append((int(rel["head"]), int(rel["tail"]), str(rel["relation_id"])))
            except (KeyError, TypeError, ValueError) as err:
                raise EvalInputError(f"{path}:{number}: field 'relations' needs objects with "
                                     "'head', 'tail' and 'relation_id'") from err
        out.append(GoldDocument(text, tuple(entities), tuple(relations)))
    return _non_empty(path, out, "documents")
