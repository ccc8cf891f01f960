"""Indexing throughput benchmark (results: the ingest rows of docs/BENCHMARKS.md; each run's
section at the top of the chapter "Indexing" of docs/bench/HISTORY.md).

1. **LLM concurrency**: the real ``ChatOpenAI`` client against the wire-protocol stub server
   of the tests (``graph_flows/testing/llm_server.py``) answering every chat request after a fixed
   latency (default 200 ms), at concurrency 1, 4 and 8. Reports chunks/s, % of the ideal
   rate (concurrency / latency) and LLM calls per chunk. Embeddings are a hash embedder here
   so the number isolates the extraction stage; ``--minilm`` adds a row with the real
   offline MiniLM embedder in the loop.
2. **Pipeline without LLM cost**: an instant in-process stub LLM; everything else is real
   (load, clean, chunk, sync, claim, validate, resolve, embed with offline MiniLM, write) on
   a generated corpus of ``--chunks`` chunks, with peak RSS sampled every 0.5 s.

Usage: ``.venv/bin/python bench/indexing_throughput.py [--chunks 5000] [--llm-chunks 64]``.
Uses the embedded PostgreSQL in a temporary directory unless KRAG_BENCH_DATABASE_URL names
a server where it may create databases.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psutil
import psycopg
from langchain_core.embeddings import DeterministicFakeEmbedding

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graph_flows.indexing.context import IndexingContext  # noqa: E402
from graph_flows.services import ingest as runner  # noqa: E402
from graph_flows.shared.providers import make_chat_model  # noqa: E402
from graph_flows.shared.resources import Resources, use_resources  # noqa: E402
from graph_flows.shared.settings import Settings  # noqa: E402
from graph_flows.testing.fakes import ContentLLMServer, ScriptedChatModel  # noqa: E402
from storage import KnowledgeStore, start_embedded, stop_embedded  # noqa: E402

FIRST = ["Ada", "Grace", "Edgar", "Michael", "Karen", "Doug", "Shay", "Emil", "Hervé", "Yury",
         "Patricia", "Jim", "Donald", "Raymond", "Larry", "Andrew", "Jolly", "Tim", "Denny",
         "Markus", "Nils", "Iryna", "Tomas", "Patrick"]
LAST = ["Lovelace", "Hopper", "Codd", "Stonebraker", "Jones", "Cutting", "Banon", "Eifrem",
        "Jegou", "Malkov", "Selinger", "Gray", "Chamberlin", "Boyce", "Ellison", "Kane", "Chen",
        "Lee", "Vrandecic", "Krotzsch", "Reimers", "Gurevych", "Mikolov", "Lewis"]
TECH = ["Quarkbase", "Lumen", "Tessera", "Vectorix", "Graphon", "Indexa", "Nimbus", "Corvid",
        "Helix", "Pylon", "Strata", "Orbit", "Falcon", "Marlin", "Zephyr", "Cobalt"]
ORGS = ["Acme Labs", "Northwind Research", "Blue Harbor Institute", "Keystone University",
        "Redwood Systems", "Polar Foundation", "Summit Data", "Ironbridge Group"]
VERBS = [("uses", "uses"), ("is part of", "part_of"), ("contains", "contains"),
         ("relies on", "uses"), ("includes", "contains")]
FILLER = ("The design favours predictable latency over peak throughput, and the team measured "
          "it carefully before each release.")
SENTENCE = re.compile(r"([A-Z][\w'-]*(?: [A-Z0-9][\w'-]*)*) (uses|is part of|contains|relies on"
                      r"|includes) ([A-Z][\w'-]*(?: [A-Z0-9][\w'-]*)*)\.")


# -- corpus and stub ------------------------------------------------------------------------
def vocabulary(rng: random.Random) -> dict[str, str]:
    names = {f"{f} {la}": "person" for f in FIRST for la in LAST}
    names.update({f"{t} {n}": "technology" for t in TECH for n in range(1, 40)})
    names.update({o: "organization" for o in ORGS})
    return dict(rng.sample(sorted(names.items()), 1200))


def write_corpus(folder: Path, chunks: int, seed: int = 7) -> dict[str, str]:
    """Markdown files of ~10 chunks each; returns the entity vocabulary (name -> type)."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    names = sorted(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    for doc in range(max(1, chunks // 10)):
        parts = [f"# Report {doc}\n"]
        for section in range(10):
            lines = [f"## Section {section}\n"]
            for _ in range(4):
                s, o = rng.sample(names, 2)
                lines.append(f"{s} {rng.choice(VERBS)[0]} {o}.")
            lines += [FILLER] * 4
            parts.append(" ".join(lines))
        (folder / f"report-{doc:05d}.md").write_text("\n\n".join(parts) + "\n")
    return vocab


def stub_reply(vocab: dict[str, str]) -> Any:
    """Instant extraction: the relation sentences of the chunk, as LLM JSON."""
    labels = dict(VERBS)

    def reply(text: str) -> str:
        ents: dict[str, dict[str, Any]] = {}
        rels = []
        for s, verb, o in SENTENCE.findall(text):
            if s not in vocab or o not in vocab:
                continue
            for name in (s, o):
                ents[name] = {"name": name, "type": vocab[name], "confidence": 0.9,
                              "description": f"{name} is a {vocab[name]} in the reports."}
            rels.append({"subject": s, "predicate": labels[verb], "object": o,
                         "fact": f"{s} {verb} {o}.", "confidence": 0.85})
        return json.dumps({"entities": list(ents.values()), "relations": rels})

    return reply


# -- infrastructure -------------------------------------------------------------------------
def _serve_stub(latency: float, n_chunks: int, queue: Any, stop: Any) -> None:
    """Child process: the stub LLM server (its CPU use stays out of the measured process)."""
    vocab = vocabulary(random.Random(7))
    with ContentLLMServer(reply=stub_reply(vocab), latency=latency) as server:
        queue.put(server.openai_url)
        stop.wait()


class StubServer:
    """The wire-protocol stub LLM in a separate process."""

    def __init__(self, latency: float, n_chunks: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._queue, self._stop = ctx.Queue(), ctx.Event()
        self._proc = ctx.Process(target=_serve_stub, args=(latency, n_chunks, self._queue,
                                                           self._stop), daemon=True)

    def __enter__(self) -> str:
        self._proc.start()
        return str(self._queue.get(timeout=60))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._proc.join(10)


class Databases:
    """Fresh databases on the embedded cluster (or KRAG_BENCH_DATABASE_URL)."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="krag-bench-"))
        self.url = os.environ.get("KRAG_BENCH_DATABASE_URL") or start_embedded(self.tmp)

    def fresh(self, model: str = "local:minilm", dim: int = 384) -> KnowledgeStore:
        name = f"krag_bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        url = urlunsplit(urlsplit(self.url)._replace(path=f"/{name}"))
        return KnowledgeStore.open(url, embedding_model=model, embedding_dim=dim)

    def close(self) -> None:
        if not os.environ.get("KRAG_BENCH_DATABASE_URL"):
            stop_embedded(self.tmp)
        shutil.rmtree(self.tmp, ignore_errors=True)


class RssSampler:
    """Peak and periodic resident set size of this process."""

    def __init__(self, every: float = 0.5) -> None:
        self.every, self.samples = every, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._proc = psutil.Process()

    def _run(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(self.every):
            self.samples.append((time.monotonic() - start, self._proc.memory_info().rss))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def mib(self, value: int) -> float:
        return round(value / 2**20, 1)


def timed_run(store: KnowledgeStore, chat: Any, embeddings: Any, corpus: Path,
              ctx: IndexingContext, settings: Settings,
              defer_index: bool) -> tuple[dict[str, Any], float]:
    with use_resources(Resources(settings, store, embeddings, chat_override=chat)):
        start = time.monotonic()
        out = runner.ingest({"paths": [str(corpus)]}, ctx, defer_index=defer_index)
        return out, time.monotonic() - start


def embedder(name: str) -> Any:
    if name == "hash":
        return DeterministicFakeEmbedding(size=384)
    from graph_flows.shared.embeddings import MiniLMEmbeddings

    emb = MiniLMEmbeddings()
    emb.embed_query("warm up")
    return emb


# -- the two measurements -------------------------------------------------------------------
def llm_concurrency(dbs: Databases, work: Path, n_chunks: int, latency: float,
                    minilm: bool, levels: list[int]) -> list[dict[str, Any]]:
    corpus = work / "llm-corpus"
    write_corpus(corpus, n_chunks)
    rows = []
    top = max(levels)
    cases = [(c, "hash", True) for c in levels] + [(top, "hash", False)]
    if minilm:
        cases.append((top, "minilm", True))
    with StubServer(latency, n_chunks) as openai_url:
        settings = Settings(_env_file=None, openai_base_url=openai_url,
                            openai_api_key="bench", chat_model="openai:stub")
        chat = make_chat_model("openai:stub", settings, temperature=0.0, streaming=False)
        for concurrency, emb_name, defer in cases:
            store = dbs.fresh()
            ctx = IndexingContext(concurrency=concurrency, batch_size=max(16, 4 * concurrency))
            out, secs = timed_run(store, chat, embedder(emb_name), corpus, ctx, settings, defer)
            done = out["chunks"]["completed"]
            rate = done / secs
            ideal = concurrency / latency
            rows.append({"concurrency": concurrency, "embedder": emb_name, "defer_index": defer,
                         "chunks": done, "seconds": round(secs, 2),
                         "chunks_per_s": round(rate, 2), "ideal_per_s": round(ideal, 2),
                         "pct_of_ideal": round(100 * rate / ideal),
                         "llm_calls_per_chunk": round(out["llm"]["calls"] / max(done, 1), 3)})
            print(json.dumps(rows[-1]), flush=True)
            store.close()
    return rows


def pipeline(dbs: Databases, work: Path, n_chunks: int, emb_name: str,
             defer: bool) -> dict[str, Any]:
    corpus = work / f"pipeline-corpus-{n_chunks}"
    vocab = write_corpus(corpus, n_chunks)
    chat = ScriptedChatModel.per_document(stub_reply(vocab), record=False)
    emb = embedder(emb_name)
    store = dbs.fresh()
    with RssSampler() as rss:
        out, secs = timed_run(store, chat, emb, corpus, IndexingContext(concurrency=2),
                              Settings(_env_file=None), defer)
    counts = store.counts()
    store.close()
    samples = [r for _, r in rss.samples] or [psutil.Process().memory_info().rss]
    quarter = [rss.mib(samples[min(len(samples) - 1, int(len(samples) * q))])
               for q in (0.25, 0.5, 0.75, 0.99)]
    done = out["chunks"]["completed"]
    row = {"embedder": emb_name, "defer_index": defer, "chunks": done,
           "seconds": round(secs, 1), "chunks_per_s": round(done / secs, 1),
           "entities": counts["entities"], "relations": counts["relations"],
           "peak_rss_mib": rss.mib(max(samples)), "rss_at_25_50_75_100_pct_mib": quarter,
           "llm_calls_per_chunk": round(out["llm"]["calls"] / max(done, 1), 3)}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=5000, help="pipeline corpus size")
    parser.add_argument("--llm-chunks", type=int, default=64, help="corpus size per LLM run")
    parser.add_argument("--latency", type=float, default=0.2, help="stub LLM latency (s)")
    parser.add_argument("--minilm", action="store_true", help="LLM row with MiniLM too")
    parser.add_argument("--levels", default="1,4,8", help="concurrency levels")
    parser.add_argument("--skip-llm", action="store_true")
    parser.add_argument("--skip-pipeline", action="store_true")
    parser.add_argument("--pipelines", default="minilm:defer,hash:defer,minilm:default",
                        help="pipeline variants: embedder:defer|default, comma-separated")
    args = parser.parse_args()
    dbs = Databases()
    work = dbs.tmp / "work"
    started = time.strftime("%Y-%m-%d %H:%M")
    print(json.dumps({"date": started, "cpus": os.cpu_count(),
                      "load_avg": os.getloadavg()}), flush=True)
    try:
        if not args.skip_llm:
            llm_concurrency(dbs, work, args.llm_chunks, args.latency, args.minilm,
                            [int(x) for x in args.levels.split(",")])
        if not args.skip_pipeline:
            for variant in args.pipelines.split(","):
                emb_name, mode = variant.split(":")
                pipeline(dbs, work, args.chunks, emb_name, mode == "defer")
    finally:
        print(json.dumps({"load_avg_end": os.getloadavg()}), flush=True)
        dbs.close()


if __name__ == "__main__":
    main()
