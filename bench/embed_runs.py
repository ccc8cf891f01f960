"""MiniLM CPU per text by ONNX run shape: runs of ``batch_size`` texts padded to the longest
(``--budgets none``) against runs under a padded-token budget, on the passages of a corpus.

Embeds the first ``--limit`` passages of a JSON-lines corpus (``{"id", "title", "text"}``, as
``krag eval multihop`` reads it) in groups of ``--group`` texts (as the ingest's write step
hands a batch's chunk texts to the model), or their sentences (``--sentences``: groups of
3 x ``--group``, like fact texts), once per budget and ``--repeat`` times alternated; prints
CPU and wall ms per text and each variant's cosine to the fp32 model run on one text at a
time (the reference: no batch effects).

    .venv/bin/python -m bench.embed_runs CORPUS [--limit 256] [--budgets none,256,512,768]
        [--sentences] [--repeat 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graph_flows.shared.embeddings import MiniLMEmbeddings  # noqa: E402

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def read_texts(path: Path, limit: int, sentences: bool) -> list[str]:
    """The first ``limit`` passages (title + text), or the first 3 x ``limit`` sentences."""
    texts: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip() and len(texts) < limit:
                row = json.loads(line)
                texts.append(f"{row.get('title') or ''} {row['text']}".strip())
    if sentences:
        return [s for t in texts for s in _SENTENCE_END.split(t) if s][: 3 * limit]
    return texts


def parse_budgets(raw: str) -> list[int | None]:
    """``none,256,512`` -> [None, 256, 512]."""
    return [None if b.strip().lower() == "none" else int(b) for b in raw.split(",")]


def measure(texts: list[str], group: int, budgets: list[int | None],
            repeat: int) -> dict[str, Any]:
    import numpy as np

    groups = [texts[i:i + group] for i in range(0, len(texts), group)]
    models = {b: MiniLMEmbeddings(token_budget=b) for b in budgets}
    reference = np.array(MiniLMEmbeddings(int8=False, token_budget=None, batch_size=1)
                         .embed_documents(texts))
    for model in models.values():
        model.embed_documents(["warm up"])
    cpu: dict[int | None, list[float]] = {b: [] for b in budgets}
    wall: dict[int | None, list[float]] = {b: [] for b in budgets}
    vectors: dict[int | None, Any] = {}
    for _ in range(repeat):
        for b, model in models.items():
            c0, w0 = time.process_time(), time.perf_counter()
            found = [v for g in groups for v in model.embed_documents(g)]
            cpu[b].append(round((time.process_time() - c0) / len(texts) * 1000, 2))
            wall[b].append(round((time.perf_counter() - w0) / len(texts) * 1000, 2))
            vectors[b] = np.array(found)
    rows = []
    for b in budgets:
        cos = (vectors[b] * reference).sum(axis=1)
        rows.append({"token_budget": b, "cpu_ms_per_text": cpu[b], "wall_ms_per_text": wall[b],
                     "cos_to_fp32_min": round(float(cos.min()), 4),
                     "cos_to_fp32_mean": round(float(cos.mean()), 4)})
    return {"texts": len(texts), "group": group, "results": rows,
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--group", type=int, default=32)
    parser.add_argument("--budgets", default="none,256,512,768")
    parser.add_argument("--sentences", action="store_true")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.limit < 1 or args.group < 1 or args.repeat < 1:
        parser.error("--limit, --group and --repeat must be positive")
    texts = read_texts(args.corpus, args.limit, args.sentences)
    group = 3 * args.group if args.sentences else args.group
    out = measure(texts, group, parse_budgets(args.budgets), args.repeat)
    if args.json:
        print(json.dumps(out))
        return
    for row in out["results"]:
        print(row)
    print("load", out["load_avg"])


if __name__ == "__main__":
    main()
