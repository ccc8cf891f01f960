"""The synthetic graph as a served store (bench.synthetic_serving, bench.throughput
--synthetic): loaded once with its questions, then answered by the product's own CLI
through the environment the throughput servers get."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from bench import synthetic, throughput
from bench import synthetic_serving as ss

REPO = Path(__file__).resolve().parents[2]
N, SEED, QUERIES = 300, 11, 12


@pytest.fixture
def fresh(pg_server_url: str):
    db = "krag_bench_300"
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    yield
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def test_loaded_once_with_its_questions_and_served_by_the_product(pg_server_url, fresh,
                                                                  tmp_path) -> None:
    lines: list[str] = []
    first = ss.prepare(pg_server_url, tmp_path, N, 3 * N, queries=QUERIES, seed=SEED,
                       workers=1, log=lines.append)
    graph = synthetic.generate_graph(N, 3 * N, SEED)
    expected = synthetic.generate_queries(graph, QUERIES)
    assert first.loaded and first.database == "krag_bench_300" and first.scope == "bench"
    assert first.questions == [q.question for q in expected]
    written = [json.loads(x) for x in first.questions_file.read_text().splitlines()]
    assert [w["question"] for w in written] == first.questions
    assert first.questions_file.parent == tmp_path

    lines.clear()
    again = ss.prepare(pg_server_url, tmp_path, N, 3 * N, queries=QUERIES, seed=SEED,
                       workers=1, log=lines.append)
    assert not again.loaded and again.questions == first.questions
    assert any("nothing to load" in x for x in lines)
    assert not any("generated graph" in x for x in lines)

    # the product answers from that database with only the served environment
    exact = next(q for q in expected if q.kind == "exact")
    env = {**os.environ, **first.env, "PYTHONPATH": str(REPO), "KRAG_CHAT_MODEL": "none",
           "KRAG_DATA_DIR": str(tmp_path / "unused")}
    env.pop("KRAG_DATABASE_READ_URL", None)
    done = subprocess.run([sys.executable, "-m", "ui.cli.app", "ask", "--json", "--scope",
                           first.scope, exact.question], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert exact.targets[0] in done.stdout
    assert not (tmp_path / "unused").exists()  # no embedded store of its own was made


def test_a_questions_file_of_another_size_is_written_again(pg_server_url, fresh,
                                                           tmp_path) -> None:
    ss.prepare(pg_server_url, tmp_path, N, 3 * N, queries=QUERIES, seed=SEED, workers=1,
               prewarm=False, log=lambda _: None)
    lines: list[str] = []
    more = ss.prepare(pg_server_url, tmp_path, N, 3 * N, queries=QUERIES + 3, seed=SEED,
                      workers=1, prewarm=False, log=lines.append)
    assert len(more.questions) == QUERIES + 3 and not more.loaded  # the graph is reused
    assert any("reusing krag_bench_300" in x for x in lines)


def test_throughput_needs_a_scope_and_questions_or_synthetic(capsys) -> None:
    args = throughput.parse_args(["--checkout", "after=.", "--synthetic", "100k"])
    assert args.synthetic == "100k" and args.scope is None
    with pytest.raises(SystemExit):
        throughput.parse_args(["--checkout", "after=.", "--scope", "s"])
    assert "--scope and --questions are required without --synthetic" in capsys.readouterr().err
