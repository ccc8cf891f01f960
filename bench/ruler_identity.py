"""The query's parse without the attribute ruler against the full pipeline, token by token.

``python -m bench.ruler_identity [--passages 600] [--whole] [--json out.json]``: the
sentences of the first N passages of the MuSiQue corpus (title + text, split by the answer's
own sentence splitter; 0: all 2,884; with ``--whole`` the passages whole too, whitespace
tokens and all) and the 100 questions, each parsed by the full ``en_core_web_sm``
pipeline and by the query's parse (:func:`graph_flows.query.answer_kind.parse`: the ruler
skipped, :mod:`graph_flows.shared.ruler_pos`). Counts the tokens whose part of speech
(``answer_kind.pos`` against ``pos_``), tag, label or head differ, and the sentences whose
entities (start, end, label) differ; exits 1 on any difference. Also the time of each parse.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "benchdata" / "multihop"


def texts(passages: int, whole: bool = False) -> list[str]:
    """The questions, then the sentences of the first ``passages`` passages (0: all), then
    with ``whole`` the passages."""
    from graph_flows.query import extractive

    rows = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    rows = rows[:passages] if passages else rows
    questions = [json.loads(line)["question"]
                 for line in (DATA / "questions.jsonl").open(encoding="utf-8")]
    said = [s for r in rows for s in extractive.sentences(f"{r['title']} {r['text']}")]
    passages_text = [f"{r['title']} {r['text']}" for r in rows] if whole else []
    return list(dict.fromkeys([*questions, *said, *passages_text]))


def differences(full: Any, lazy: Any) -> dict[str, int]:
    """Tokens of ``lazy`` (the query's parse) whose POS, tag, label or head differ from
    ``full``'s, and whether the entities differ (1) or not (0)."""
    from graph_flows.query import answer_kind

    out = {"pos": 0, "tag": 0, "dep": 0, "head": 0, "ents": 0, "tokens": len(full)}
    if [t.text for t in full] != [t.text for t in lazy]:
        raise SystemExit(f"tokenisation differs: {full.text!r}")
    for a, b in zip(full, lazy, strict=True):
        out["pos"] += a.pos_ != answer_kind.pos(b)
        out["tag"] += a.tag_ != b.tag_
        out["dep"] += a.dep_ != b.dep_
        out["head"] += a.head.i != b.head.i
    ents = [(e.start, e.end, e.label_) for e in full.ents]
    out["ents"] = int(ents != [(e.start, e.end, e.label_) for e in lazy.ents])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=600)
    ap.add_argument("--whole", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    from graph_flows.query import answer_kind
    from graph_flows.shared.nlp import lazy_ruler, load_nlp

    nlp, lazy = load_nlp(), lazy_ruler()
    if nlp is None or lazy is None:
        print("the spaCy pipeline is missing or keeps its ruler: nothing to compare")
        return 1
    todo = texts(args.passages, args.whole)
    t0 = time.perf_counter()
    full = list(nlp.pipe(todo))
    t1 = time.perf_counter()
    ours = answer_kind.parse(todo)
    t2 = time.perf_counter()
    total = {"texts": len(todo), "tokens": 0, "pos": 0, "tag": 0, "dep": 0, "head": 0,
             "ents": 0, "settled": sum(d.has_annotation("POS") for d in ours),
             "verbs_or_aux": sum(t.pos_ in ("VERB", "AUX") for d in full for t in d),
             "full_s": round(t1 - t0, 2), "query_s": round(t2 - t1, 2)}
    for a, b in zip(full, ours, strict=True):
        for key, n in differences(a, b).items():
            total[key] += n
    print(json.dumps(total))
    if args.json:
        args.json.write_text(json.dumps(total, indent=1) + "\n", encoding="utf-8")
    return 1 if any(total[k] for k in ("pos", "tag", "dep", "head", "ents")) else 0


if __name__ == "__main__":
    sys.exit(main())
