"""JSON, JSON Lines and RTF as text.

JSON: every value that is text, a number or a boolean is kept with its key path
(``address.city: London``); nulls and empty strings are dropped. A list of objects (the
top level, or under a key) gives one list item per element, ``- item 3: name: Ada; role:
analyst`` (numbered from 1); the values of a top-level object's keys that hold objects or
lists go under a ``# <key>`` heading. JSON Lines (``.jsonl``, ``.ndjson``): one list item
per line, ``- line 12: ...``, read as a stream; a line that is not JSON refuses the file,
naming the line. RTF: the text striprtf reads, one paragraph per RTF paragraph, table rows
as ``| a | b |`` lines (RTF keeps no heading structure that striprtf reads).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.containers import Unreadable
from graph_flows.indexing.documents.encoding import sniff_encoding

MB = 1 << 20


def convert_json(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of a JSON file (read whole: the caller caps its
    size)."""
    data = _parse(_text(path))
    return None, _json_blocks(data), {}


def convert_jsonl(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of a JSON Lines file."""
    encoding = _encoding(path)

    def blocks() -> Iterator[str]:
        with path.open(encoding=encoding) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                flat = flatten(_parse(line, number))
                if flat:
                    yield f"- line {number}: {flat}\n"

    return None, blocks(), {}


def convert_rtf(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, text blocks, metadata) of an RTF file (read whole: the caller caps its
    size)."""
    from striprtf.striprtf import rtf_to_text

    raw = _text(path)
    if not raw.lstrip().startswith("{\\rtf"):
        raise Unreadable("not an RTF file (no {\\rtf header); check the file or its extension")
    return None, _rtf_blocks(rtf_to_text(raw, errors="ignore")), {}


def _rtf_blocks(text: str) -> Iterator[str]:
    """Each RTF paragraph a block; a table row (cells ended by "|") a ``| a | b |`` line."""
    for line in text.split("\n"):
        line = line.strip()
        if line.endswith("|"):
            yield "| " + " | ".join(c.strip() for c in line[:-1].split("|")) + " |\n"
        elif line:
            yield f"\n{line}\n\n"


def flatten(value: Any, prefix: str = "") -> str:
    """``key.path: value; ...`` of the scalar values in ``value``."""
    return "; ".join(f"{key}: {text}" if key else text for key, text in _scalars(value, prefix))


def _json_blocks(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        simple = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
        if line := flatten(simple):
            yield f"{line}\n\n"
        for key, value in data.items():
            if isinstance(value, dict | list) and (inner := list(_value_blocks(value))):
                yield f"# {' '.join(str(key).split())}\n\n"
                yield from inner
    else:
        yield from _value_blocks(data)


def _value_blocks(value: Any) -> Iterator[str]:
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        for number, item in enumerate(value, start=1):
            if flat := flatten(item):
                yield f"- item {number}: {flat}\n"
        yield "\n"
    elif flat := flatten(value):
        yield f"{flat}\n\n"


def _scalars(value: Any, prefix: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _scalars(inner, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for inner in value:
            yield from _scalars(inner, prefix)
    elif isinstance(value, bool):
        yield prefix, "true" if value else "false"
    elif value is not None and (text := " ".join(str(value).split())):
        yield prefix, text


def _encoding(path: Path) -> str:
    encoding = sniff_encoding(path)
    if encoding is None:
        raise Unreadable("looks binary (NUL bytes or not UTF-8/UTF-16/Windows-1252 text); "
                         "check the file or its extension")
    return encoding


def _text(path: Path) -> str:
    with path.open(encoding=_encoding(path)) as handle:
        return handle.read()


def _parse(text: str, line: int | None = None) -> Any:
    """The JSON value of ``text`` (``line``: its line number in a JSON Lines file)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        where = (f"line {line}, column {err.colno}" if line is not None
                 else f"line {err.lineno}, column {err.colno}")
        raise Unreadable(f"not valid JSON ({err.msg} at {where}); fix or re-export it") from err
    except RecursionError as err:
        raise Unreadable("JSON nested too deeply; flatten it") from err
