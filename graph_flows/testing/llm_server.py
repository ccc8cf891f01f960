"""A small real HTTP server speaking the Ollama and OpenAI wire protocols, for tests and
benchmarks.

The real ``langchain-ollama`` / ``langchain-openai`` clients run against it. Replies are
scripted (consumed in order, then ``default_reply``); every request is recorded.

Ollama: ``GET /api/tags``, ``GET /api/version``, ``POST /api/chat`` (NDJSON stream unless
``"stream": false``), ``POST /api/embed``. OpenAI: ``GET /v1/models``,
``POST /v1/chat/completions`` (SSE when ``"stream": true``, usage chunk when
``stream_options.include_usage``), ``POST /v1/embeddings`` (float or base64).

Faults: ``fail_next(n, status)`` (HTTP errors), ``truncate_next(n)`` (the body or stream is
cut off mid-way and the connection closed), ``malformed_next(n)`` (a non-JSON body, or a
garbage line inside the stream), ``latency`` / ``token_delay`` (slow server), and ``fault``:
a per-request hook ``fault(request) -> None | int (HTTP status) | "truncate" | "malformed" |
float (extra seconds of delay)`` for faults that must follow the content (e.g. one chunk).

A reply becomes a tool call when the request offers ``tools`` and either the reply is a
dict ``{"tool_call": {"name": ..., "arguments": {...}}}`` or the reply text is a JSON
object (called on the tool forced by ``tool_choice``, else the first tool).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import random
import re
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = str | dict[str, Any]
Fault = int | float | str | None


@dataclass
class RecordedRequest:
    """One request as received: method, path, parsed JSON body (or None), lower-cased headers."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def split_tokens(text: str) -> list[str]:
    """Whitespace-delimited pieces whose concatenation is exactly ``text``."""
    return re.findall(r"\S+\s*|\s+", text) or [""]


def count_tokens(text: str) -> int:
    return len(text.split())


def fake_embedding(text: str, dim: int) -> list[float]:
    """Deterministic unit vector seeded by the sha256 of ``text``."""
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    vec = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up (timeouts under test) are expected; anything else is shown."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LLMServer:
    """Scriptable fake LLM server; use as a context manager or call start()/stop()."""

    def __init__(
        self, *, models: tuple[str, ...] = ("qwen2.5:7b-instruct", "nomic-embed-text:latest",
                                            "gpt-4o-mini", "text-embedding-3-small"),
        default_reply: str = "OK", dim: int = 16, latency: float = 0.0,
        token_delay: float = 0.0,
    ) -> None:
        self.models = list(models)
        self.default_reply = default_reply
        self.dim = dim
        self.latency = latency
        self.token_delay = token_delay
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._fail: deque[int] = deque()
        self._modes: deque[str] = deque()
        self.fault: Any = None
        """Optional hook ``fault(RecordedRequest) -> Fault`` consulted on every request."""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: _QuietServer | None = None
        self._thread: threading.Thread | None = None

    # -- control -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:PORT`` (Ollama host; OpenAI is ``url + '/v1'``)."""
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    def script(self, *replies: Reply) -> LLMServer:
        """Queue replies consumed in order by chat requests."""
        with self._lock:
            self._replies.extend(replies)
        return self

    def fail_next(self, n: int = 1, status: int = 500) -> LLMServer:
        """Answer the next ``n`` requests (any path) with HTTP ``status``."""
        with self._lock:
            self._fail.extend([status] * n)
        return self

    def truncate_next(self, n: int = 1) -> LLMServer:
        """Cut the next ``n`` chat/embedding replies off mid-way (connection closed)."""
        with self._lock:
            self._modes.extend(["truncate"] * n)
        return self

    def malformed_next(self, n: int = 1) -> LLMServer:
        """Make the next ``n`` chat/embedding replies malformed (non-JSON body/stream line)."""
        with self._lock:
            self._modes.extend(["malformed"] * n)
        return self

    def bodies(self, path: str) -> list[Any]:
        """Recorded JSON bodies of requests to ``path``."""
        return [r.body for r in self.requests if r.path == path]

    def start(self) -> LLMServer:
        handler = type("Handler", (_Handler,), {"llm": self})
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True, name="llm-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals used by the handler ---------------------------------------------------
    def _next_reply(self) -> Reply:
        with self._lock:
            return self._replies.popleft() if self._replies else self.default_reply

    def _take_failure(self) -> int | None:
        with self._lock:
            return self._fail.popleft() if self._fail else None

    def _take_fault(self, req: RecordedRequest) -> Fault:
        if req.method == "POST":
            with self._lock:
                if self._modes:
                    return self._modes.popleft()
        return self.fault(req) if self.fault is not None else None

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)

    def next_id(self) -> int:
        return next(self._ids)


def _tool_call(reply: Reply, body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) if this reply should be answered as a tool call."""
    tools = body.get("tools") or []
    if isinstance(reply, dict):
        call = reply["tool_call"]
        return call["name"], dict(call.get("arguments", {}))
    if not tools:
        return None
    try:
        args = json.loads(reply)
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("function", {}).get("name"):
        return choice["function"]["name"], args
    return tools[0].get("function", tools[0]).get("name", "tool"), args


def _prompt_tokens(body: dict[str, Any]) -> int:
    total = 0
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        total += count_tokens(str(content or ""))
    return total


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    llm: LLMServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    # -- plumbing ------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._dispatch(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_raw": raw.decode(errors="replace")}
        self._dispatch(body)

    def _dispatch(self, body: Any) -> None:
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        req = RecordedRequest(self.command, path, body, headers)
        self.llm._record(req)
        if self.llm.latency:
            time.sleep(self.llm.latency)
        status = self.llm._take_failure()
        fault = self.llm._take_fault(req)
        self._mode = fault if isinstance(fault, str) else None
        if isinstance(fault, float):
            time.sleep(fault)
        elif isinstance(fault, int) and status is None:
            status = fault
        if status is not None:
            err = {"error": {"message": "injected failure", "type": "server_error"}}
            return self._json(err if path.startswith("/v1") else {"error": "injected failure"},
                              status)
        route = _ROUTES.get((self.command, path))
        if route is None:
            return self._json({"error": f"no route {self.command} {path}"}, 404)
        route(self, body or {})

    _mode: str | None = None

    def _json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        mode, self._mode = self._mode, None
        if mode == "malformed":
            data = data[: len(data) // 2] + b"<<garbage"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if mode == "truncate":
            self.wfile.write(data[: len(data) // 2])
            self._hang_up()
            return
        self.wfile.write(data)

    def _hang_up(self) -> None:
        """Close the connection mid-reply (a truncated body or stream)."""
        import socket

        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _stream(self, content_type: str, pieces: list[bytes]) -> None:
        mode, self._mode = self._mode, None
        if mode == "malformed":
            garbage = b"data: {not json\n\n" if content_type == "text/event-stream" \
                else b"{not json\n"
            pieces = pieces[: len(pieces) // 2] + [garbage] + pieces[len(pieces) // 2:]
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, piece in enumerate(pieces):
            if mode == "truncate" and i == max(1, len(pieces) // 2):
                self._hang_up()
                return
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            if self.llm.token_delay:
                time.sleep(self.llm.token_delay)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- Ollama --------------------------------------------------------------------------
    def ollama_tags(self, _body: Any) -> None:
        models = [{"name": m if ":" in m else f"{m}:latest", "model": m, "size": 1,
                   "modified_at": "2025-01-01T00:00:00Z", "digest": "0" * 64,
                   "details": {"format": "gguf", "family": "test"}} for m in self.llm.models]
        self._json({"models": models})

    def ollama_version(self, _body: Any) -> None:
        self._json({"version": "0.6.0"})

    def ollama_chat(self, body: dict[str, Any]) -> None:
        reply, model = self.llm._next_reply(), body.get("model", "")
        call = _tool_call(reply, body)
        text = "" if call else str(reply)
        base = {"model": model, "created_at": "2025-01-01T00:00:00Z"}
        final = {**base, "message": {"role": "assistant", "content": ""}, "done": True,
                 "done_reason": "stop", "total_duration": 1000, "load_duration": 10,
                 "prompt_eval_count": _prompt_tokens(body), "prompt_eval_duration": 100,
                 "eval_count": len(split_tokens(text)) if text else 1, "eval_duration": 100}
        if call:
            final["message"]["tool_calls"] = [
                {"function": {"name": call[0], "arguments": call[1]}}]
        if body.get("stream", True) is False:
            final["message"]["content"] = text
            return self._json(final)
        lines = [{**base, "message": {"role": "assistant", "content": tok}, "done": False}
                 for tok in (split_tokens(text) if text else [])]
        lines.append(final)
        self._stream("application/x-ndjson", [json.dumps(x).encode() + b"\n" for x in lines])

    def ollama_embed(self, body: dict[str, Any]) -> None:
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else list(texts)
        dim = body.get("dimensions") or self.llm.dim
        self._json({"model": body.get("model", ""), "total_duration": 1000,
                    "load_duration": 10, "prompt_eval_count": sum(map(count_tokens, texts)),
                    "embeddings": [fake_embedding(t, dim) for t in texts]})

    # -- OpenAI --------------------------------------------------------------------------
    def openai_models(self, _body: Any) -> None:
        self._json({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "test"}
            for m in self.llm.models]})

    def openai_chat(self, body: dict[str, Any]) -> None:
        reply, n = self.llm._next_reply(), self.llm.next_id()
        call = _tool_call(reply, body)
        text = "" if call else str(reply)
        pieces = split_tokens(json.dumps(call[1]) if call else text)
        prompt = _prompt_tokens(body)
        usage = {"prompt_tokens": prompt, "completion_tokens": len(pieces),
                 "total_tokens": prompt + len(pieces)}
        head = {"id": f"chatcmpl-{n}", "created": int(time.time()),
                "model": body.get("model", ""), "system_fingerprint": "fp_test"}
        finish = "tool_calls" if call else "stop"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None,
                                       "refusal": None}
            if call:
                message["tool_calls"] = [{"id": f"call_{n}", "type": "function", "function": {
                    "name": call[0], "arguments": json.dumps(call[1])}}]
            return self._json({**head, "object": "chat.completion", "usage": usage,
                               "choices": [{"index": 0, "message": message, "logprobs": None,
                                            "finish_reason": finish}]})
        self._stream("text/event-stream", self._sse(head, pieces, call, finish, usage, body, n))

    @staticmethod
    def _sse(head: dict[str, Any], pieces: list[str], call: tuple[str, Any] | None,
             finish: str, usage: dict[str, int], body: dict[str, Any], n: int) -> list[bytes]:
        def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
            return {**head, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}]}

        events = [chunk({"role": "assistant", "content": "" if not call else None})]
        if call:
            events.append(chunk({"tool_calls": [{"index": 0, "id": f"call_{n}",
                                                 "type": "function", "function": {
                                                     "name": call[0], "arguments": ""}}]}))
            events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
                       for p in pieces]
        else:
            events += [chunk({"content": p}) for p in pieces]
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**head, "object": "chat.completion.chunk", "choices": [],
                           "usage": usage})
        return [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events] + \
            [b"data: [DONE]\n\n"]

    def openai_embeddings(self, body: dict[str, Any]) -> None:
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else list(raw)
        if texts and isinstance(texts[0], int):  # one token list
            texts = [texts]
        texts = [t if isinstance(t, str) else json.dumps(t) for t in texts]
        dim = body.get("dimensions") or self.llm.dim
        b64 = body.get("encoding_format") == "base64"
        data = []
        for i, t in enumerate(texts):
            vec = fake_embedding(t, dim)
            emb: Any = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode() if b64 else vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(map(count_tokens, texts))
        self._json({"object": "list", "data": data, "model": body.get("model", ""),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


_ROUTES = {
    ("GET", "/api/tags"): _Handler.ollama_tags,
    ("GET", "/api/version"): _Handler.ollama_version,
    ("POST", "/api/chat"): _Handler.ollama_chat,
    ("POST", "/api/embed"): _Handler.ollama_embed,
    ("GET", "/v1/models"): _Handler.openai_models,
    ("POST", "/v1/chat/completions"): _Handler.openai_chat,
    ("POST", "/v1/embeddings"): _Handler.openai_embeddings,
}
