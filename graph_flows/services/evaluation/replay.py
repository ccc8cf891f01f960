"""A replay model server: recorded LLM extractions answered over the OpenAI wire protocol.

`krag eval multihop --extraction replay:FILE` measures the LLM extraction path without an
LLM. FILE holds one recording per passage (JSON lines ``{"passage_id", "entities": [name,
...], "triples": [[subject, predicate, object], ...]}``, e.g. GPT-3.5's OpenIE output shipped
with HippoRAG). :class:`ReplayServer` serves it on loopback (stdlib ``ThreadingHTTPServer``, a
free port): ``GET /v1/models`` and ``POST /v1/chat/completions``, so the real
``langchain-openai`` client, parser, validator, resolver and store run on real model output.

Finding the passage: the chunk text between the prompt's ``<document>`` tags is matched
against the corpus passages (``title + " " + text``), both folded to letters and digits
(NFKC, case-folded), so cleaning and prompt sanitising do not matter. A chunk contained in
several passages is given to the one named on the prompt's ``Document:`` line, else the first.

Mapping onto :class:`~graph_flows.indexing.extraction.schema.Extraction` (nothing invented,
nothing repaired): entities are the recorded names plus the triples' arguments (OpenIE has no
separate node list; HippoRAG makes every argument a node), each ``{"name", "type": ""}``:
no type, description or confidence was recorded, so the pipeline's defaults apply. A
well-formed triple becomes ``{"subject", "predicate", "object"}`` (the pipeline writes the
fact sentence and maps the predicate); a malformed one (not three strings) is sent as the
model wrote it, a bare list, for the pipeline to drop and count.

Chunks of a passage longer than one chunk: a triple goes to every chunk in which its subject
or object occurs; a triple whose arguments occur nowhere in the passage goes to the passage's
first chunk, so every recorded triple is sent at least once and its provenance is the chunk
that names it. Recorded names go to the chunks naming them (the first chunk takes the rest).

A chunk whose passage has no recording gets HTTP 422 with a one-line reason (the client does
not retry a 4xx), so that chunk fails with the reason in `krag status` and the run goes on.
``stream: true`` is refused with HTTP 400: extraction never streams.
"""

from __future__ import annotations

import bisect
import json
import logging
import re
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from graph_flows.services.evaluation.data import EvalInputError, Passage, json_lines

log = logging.getLogger(__name__)

MODEL = "replay"
_DOCUMENT = re.compile(r"<document>\n?(.*?)\n?</document>", re.DOTALL)
_URI = re.compile(r"^Document: (.+)$", re.MULTILINE)
_SEP = "\x00"


def fold(text: str) -> str:
    """Matching form of a text: NFKC, case-folded, letters and digits only."""
    return "".join(c for c in unicodedata.normalize("NFKC", text).casefold() if c.isalnum())


@dataclass(frozen=True)
class Recording:
    """One passage's recorded extraction, as the model wrote it."""

    entities: tuple[Any, ...]
    triples: tuple[Any, ...]


def read_recordings(path: Path) -> dict[str, Recording]:
    """Recordings by passage id; a line without ``passage_id`` or with non-list ``entities`` /
    ``triples`` raises :class:`EvalInputError` naming file, line and field."""
    out: dict[str, Recording] = {}
    for number, obj in json_lines(Path(path)):
        pid = obj.get("passage_id")
        if not isinstance(pid, str) or not pid:
            raise EvalInputError(f"{path}:{number}: field 'passage_id' missing or not a string")
        for name in ("entities", "triples"):
            if not isinstance(obj.get(name, []), list):
                raise EvalInputError(f"{path}:{number}: field {name!r} is not a list")
        out[pid] = Recording(tuple(obj.get("entities") or ()), tuple(obj.get("triples") or ()))
    if not out:
        raise EvalInputError(f"{path}: no recordings")
    return out


def _ends(triple: Any) -> list[str]:
    """The arguments of a triple (subject and object; first and last item of a malformed
    list), as strings."""
    if not isinstance(triple, list) or not triple:
        return []
    items = [triple[0], triple[-1]] if len(triple) > 1 else [triple[0]]
    return [x for x in items if isinstance(x, str) and x.strip()]


def _well_formed(triple: Any) -> bool:
    return isinstance(triple, list) and len(triple) == 3 and all(
        isinstance(x, str) for x in triple)


class ReplayBook:
    """The recordings and the corpus they belong to; answers one prompt at a time."""

    def __init__(self, recordings: dict[str, Recording], passages: Sequence[Passage]) -> None:
        self.recordings = recordings
        self.passages = list(passages)
        self._folded = [fold(p.full_text) for p in self.passages]
        self._haystack = _SEP.join(self._folded)
        self._starts: list[int] = []
        pos = 0
        for text in self._folded:
            self._starts.append(pos)
            pos += len(text) + 1

    def passage_of(self, chunk: str, uri: str | None) -> tuple[int, int] | None:
        """Index of the passage containing ``chunk`` and the chunk's folded offset in it."""
        needle = fold(chunk)
        if not needle:
            return None
        hits: list[tuple[int, int]] = []
        at = self._haystack.find(needle)
        while at != -1 and len(hits) < 50:
            i = bisect.bisect_right(self._starts, at) - 1
            hits.append((i, at - self._starts[i]))
            at = self._haystack.find(needle, at + 1)
        named = [h for h in hits if self.passages[h[0]].id == uri]
        return (named or hits or [None])[0]

    def respond(self, body: dict[str, Any]) -> Reply:
        """The extraction of the last ``<document>`` of the request's messages (the
        system message names the tags too), or an HTTP error saying why there is none."""
        prompt = "\n".join(message_text(m.get("content")) for m in body.get("messages") or [])
        documents, uris = _DOCUMENT.findall(prompt), _URI.findall(prompt)
        if not documents:
            return Reply(status=400, code="no_document", counts={"no_document": 1},
                         error="no <document> in the prompt: not an extraction request")
        reply, why = self.extraction_for(documents[-1], uris[-1].strip() if uris else None)
        if reply is None:
            return Reply(status=422, code="no_recording", counts={"no_recording": 1},
                         error=f"replay: {why}")
        return Reply(json.dumps(reply, ensure_ascii=False), counts={
            "answered": 1, "entities_sent": len(reply["entities"]),
            "relations_sent": len(reply["relations"])})

    def extraction_for(self, chunk: str, uri: str | None) -> tuple[dict[str, Any] | None, str]:
        """The Extraction-shaped reply for a chunk, or None and why there is none."""
        found = self.passage_of(chunk, uri)
        if found is None:
            return None, f"the chunk's text matches no corpus passage (Document: {uri})"
        index, offset = found
        passage = self.passages[index]
        recording = self.recordings.get(passage.id)
        if recording is None:
            return None, f"no recorded extraction for passage {passage.id}"
        return map_recording(recording, fold(chunk), self._folded[index], first=offset == 0), ""


def map_recording(recording: Recording, chunk: str, passage: str, *,
                  first: bool) -> dict[str, Any]:
    """Map a recording onto the extraction schema for one chunk of a passage (both folded;
    ``first``: the chunk starts the passage). Rules in the module docstring."""
    def occurs(name: str, text: str) -> bool:
        key = fold(name)
        return bool(key) and key in text

    names = [n for n in recording.entities if isinstance(n, str) and (
        occurs(n, chunk) or (first and not occurs(n, passage)))]
    relations: list[Any] = []
    for triple in recording.triples:
        ends = _ends(triple)
        here = any(occurs(e, chunk) for e in ends)
        if here or (first and not any(occurs(e, passage) for e in ends)):
            good = _well_formed(triple)
            relations.append({"subject": triple[0], "predicate": triple[1],
                              "object": triple[2]} if good else triple)
            names += ends if good else []
    entities = [{"name": n, "type": ""} for n in dict.fromkeys(n for n in names if n.strip())]
    return {"entities": entities, "relations": relations}


@dataclass
class ReplayStats:
    """What the server answered (thread-safe counters)."""

    counts: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **values: int) -> None:
        with self.lock:
            self.counts.update(values)

    def as_dict(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)


@dataclass(frozen=True)
class Reply:
    """A book's answer to one chat completion request: the assistant's JSON text (sent as
    the message content, or as the arguments of a tool call when the request offered
    tools), or an HTTP error ``status`` with a one-line ``error`` and its ``code``;
    ``counts`` go to the server's stats."""

    content: str | None = None
    status: int = 200
    error: str = ""
    code: str = ""
    counts: dict[str, int] = field(default_factory=dict)


class Book(Protocol):
    """What a replay server answers from."""

    def respond(self, body: dict[str, Any]) -> Reply:
        """The reply to one ``/chat/completions`` request body (not streamed)."""
        ...


class _Handler(BaseHTTPRequestHandler):
    """OpenAI wire protocol: ``GET /v1/models``, ``POST /v1/chat/completions``."""

    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("replay: " + format, *args)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": 0, "owned_by": "krag-replay"}]})
        else:
            self._error(404, f"unknown path {self.path}", "not_found")

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._error(404, f"unknown path {self.path}", "not_found")
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            prompt = "\n".join(message_text(m.get("content")) for m in body.get("messages") or [])
        except (ValueError, AttributeError, TypeError):
            self._error(400, "the request body is not a chat completion request", "bad_request")
            return
        if body.get("stream"):
            self._error(400, "the replay server does not stream; send stream=false",
                        "stream_unsupported")
            return
        self._complete(body, prompt)

    def _complete(self, body: dict[str, Any], prompt: str) -> None:
        reply = self.server.book.respond(body)
        self.server.stats.add(requests=1, **reply.counts)
        if reply.content is None:
            self._error(reply.status, reply.error, reply.code)
            return
        usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(reply.content) // 4}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self._send(200, {
            "id": f"chatcmpl-replay-{time.monotonic_ns()}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model") or MODEL,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": _message(body, reply.content)}],
            "usage": usage})

    def _error(self, status: int, message: str, code: str) -> None:
        self._send(status, {"error": {"message": message, "type": "invalid_request_error",
                                      "param": None, "code": code}})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _message(body: dict[str, Any], content: str) -> dict[str, Any]:
    """The assistant message: ``content`` as its text (a ``response_format`` request), or,
    when the request offered tools, as the arguments of a call of the tool it chose (its
    ``tool_choice``, else its first tool)."""
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []
             if isinstance(t, dict)]
    if not tools:
        return {"role": "assistant", "content": content, "refusal": None}
    choice = body.get("tool_choice")
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    return {"role": "assistant", "content": None, "refusal": None, "tool_calls": [{
        "id": f"call_replay_{time.monotonic_ns()}", "type": "function",
        "function": {"name": name or tools[0], "arguments": content}}]}


def message_text(content: Any) -> str:
    """A message's text (a string, or OpenAI content parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, book: Book) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.book = book
        self.stats = ReplayStats()


class ReplayServer:
    """The replay server on a free loopback port, for the length of a ``with`` block."""

    def __init__(self, book: Book) -> None:
        self._server = _Server(book)
        self._thread = threading.Thread(target=self._server.serve_forever, name="replay-llm",
                                        daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL to point a client at (``http://127.0.0.1:<port>/v1``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def stats(self) -> dict[str, int]:
        """What the book answered so far: ``requests`` and the book's counts (extraction:
        answered, no_recording, entities_sent, relations_sent)."""
        return self._server.stats.as_dict()

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        log.info("replay model server at %s", self.base_url)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
