"""What `krag` prints: progress on a pipe, the ETA, 80-column tables, empty folders, and one
``error: ...`` line for every failure of every command."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from graph_flows.services import ingest as runner
from graph_flows.services.sources import StatusReport
from graph_flows.shared import providers
from graph_flows.shared.resources import use_resources
from graph_flows.testing.fakes import ContentLLMServer
from storage import KnowledgeStore
from storage.stats import SourceStats
from tests.procs import run_cli as cli
from tests.ui.test_ingest_cli import SAMPLE, llm_env, resources
from ui.cli.ingest import status_tables
from ui.cli.progress import Eta, IngestProgress, Snapshot, clock

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for key in [k for k in os.environ if k.startswith("KRAG_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # no stray .env
    providers.clear_probe_cache()
    runner.clear_model_cache()
    yield
    runner.clear_model_cache()


# -- progress -------------------------------------------------------------------------------
def test_eta_waits_for_a_few_batches_then_uses_the_run_rate() -> None:
    eta = Eta()
    assert eta.update(10, 50, 101.0) is None  # 10 done before this run: not this run's work
    assert eta.update(14, 50, 130.0) is None  # the first batch (and 29 s of start-up)
    assert eta.update(14, 50, 135.0) is None
    left = eta.update(18, 50, 140.0)  # the next batch: 4 chunks in 10 s, 32 left
    assert left == pytest.approx(32 * 10 / 4)
    assert eta.update(26, 50, 150.0) == pytest.approx(24 * 20 / 12)
    assert eta.update(50, 50, 160.0) == 0.0
    assert clock(80) == "1:20" and clock(3725) == "1:02:05"


def test_progress_line_fits_80_columns_on_a_terminal() -> None:
    snap = Snapshot(done=12_345, total=23_456, failed=123, entities=123_456,
                    relations=234_567, elapsed=3723, eta=7384)
    assert snap.text(72) == "12345/23456 chunks (52%), 123 failed, 1:02:03 elapsed, ETA 2:03:04"
    assert snap.text(120).endswith("ETA 2:03:04; 123456 entities, 234567 relations")
    screen = io.StringIO()
    console = Console(file=screen, width=80, force_terminal=True, color_system=None)
    bar = IngestProgress(console)
    with bar:
        bar.update({"completed": 1200, "failed": 3, "total": 3400, "entities": 12_345,
                    "relations": 8_000, "llm_calls": 1200})
    frames = [f for f in screen.getvalue().split("\x1b[2K") if f.strip()]
    lines = frames[-1].replace("\x1b[?25h", "").splitlines()  # the last frame drawn
    assert lines and all(len(line) <= 80 for line in lines), lines
    assert "1203/3400 chunks (35%), 3 failed, 0:00 elapsed, ETA --" in lines[-1], lines


def test_piped_ingest_prints_progress_lines_with_an_eta(
        empty_db_url: str, tmp_path: Path) -> None:
    """A real `krag ingest` whose stderr is a pipe: a first line at once, then a plain
    progress line every --progress-every seconds, an ETA once batches finished."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("01-relational-origins.md", "02-postgres-lineage.md"):
        shutil.copy(SAMPLE / name, corpus / name)
    env = {**os.environ, "COLUMNS": "80", "PYTHONPYCACHEPREFIX":
           str(Path(tempfile.gettempdir()) / "krag-pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with ContentLLMServer(dim=384) as server:
        server.latency = 0.25
        env.update(llm_env(empty_db_url, tmp_path, server))
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "ui.cli.app", "ingest", str(corpus), "--concurrency", "1",
             "--batch-size", "2", "--progress-every", "0.5"],
            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[tuple[float, str]] = []

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append((time.monotonic() - started, line.rstrip("\n")))

        reader = threading.Thread(target=read)
        reader.start()
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.wait(timeout=300)
        reader.join()
    text = "\n".join(f"{t:5.1f} {line}" for t, line in lines)
    assert proc.returncode == 0, text
    first_at, first = lines[0]
    assert first == f"Ingesting {corpus} …", text
    assert first_at < 3.0, first_at  # before the graph stack is imported (~0.3 s unloaded)
    timed = [(t, line) for t, line in lines if line.startswith("ingest: ")]
    progress = [line for _, line in timed]
    assert len(progress) >= 3, text
    assert all(len(line) <= 80 for line in progress), progress
    assert "ETA --" in progress[0]  # no estimate before a few batches finished
    # The first estimate is real: within a factor of two of the time the run then took.
    at, line = next((t, line) for t, line in timed[:-1] if "ETA --" not in line)
    minutes, seconds = line.split("ETA ")[1].split(";")[0].split(":")
    took = timed[-1][0] - at
    assert abs(int(minutes) * 60 + int(seconds) - took) <= max(took, 2.0), text
    chunks = progress[-1].split()[1]
    assert chunks.split("/")[0] == chunks.split("/")[1] and "(100%)" in progress[-1]
    assert "Ingest finished" in out


# -- folders without documents ----------------------------------------------------------------
def test_folder_without_supported_files_says_so(
        capsys: pytest.CaptureFixture[str], store: KnowledgeStore, tmp_path: Path) -> None:
    empty, images = tmp_path / "empty", tmp_path / "images"
    empty.mkdir()
    images.mkdir()
    (images / "scan.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    with use_resources(resources(store)):
        code, out, err = cli(capsys, "ingest", str(empty))
        assert code == 0
        assert f"No supported files in {empty}: nothing to index (supported: " in out
        assert ".docx" in out and ".htm" in out
        assert err.count("ingest: 0/? chunks") == 1, err  # no repeated final line
        code, out, _ = cli(capsys, "ingest", str(images))
        assert code == 0 and f"No supported files in {images}" in out
        assert "scan.png: unsupported file type '.png'" in out
        (images / "empty.md").write_text("")
        code, out, _ = cli(capsys, "ingest", str(images))
        assert code == 0 and f"Nothing indexed from {images}: every file was skipped" in out
        assert "empty.md: empty file" in out
        code, out, _ = cli(capsys, "ingest", str(SAMPLE / "01-relational-origins.md"))
    assert code == 0 and "No supported files" not in out and "Nothing indexed" not in out


# -- krag status at 80 columns ----------------------------------------------------------------
def _stats(source: str, n: int) -> SourceStats:
    return SourceStats("team-alpha", source, n, {"completed": 120 * n, "pending": 3,
                                                  "extracting": 0, "failed": 7},
                       1_234_567, 2_345_678, 123_456, 12_345_678, 2_345_678)


def test_status_tables_never_cut_a_number_at_80_columns() -> None:
    report = StatusReport("local:minilm", 384, [
        _stats("a-very-long-source-name-for-the-corpus", 1_234), _stats("docs", 2)])
    for width in (80, 200):
        console = Console(width=width, record=True)
        tables = status_tables(report, width)
        assert len(tables) == (2 if width == 80 else 1)
        for table in tables:
            console.print(table)
        lines = console.export_text().splitlines()
        assert all(len(line) <= width for line in lines)
        cells = " ".join(lines).split()
        for number in ("148080/148090", "1234567", "2345678", "123456", "12345678"):
            assert number in cells, (number, lines)


def test_status_command_at_80_columns(db_url: str, tmp_path: Path) -> None:
    store = KnowledgeStore.open(db_url, embedding_model="local:minilm", embedding_dim=384)
    try:
        with use_resources(resources(store)):
            runner.run_indexing({"paths": [str(SAMPLE / "06-graph-rag.md")],
                                 "source": "graph-rag-notes-with-a-long-name"})
    finally:
        store.close()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KRAG_")},
           "KRAG_DATABASE_URL": db_url, "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "ui.cli.app", "status"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), r.stdout
    header = next(line for line in lines if "entities" in line).split()
    assert header == ["source", "docs", "chunks", "pending", "failed", "entities", "relations"]
    assert "tokens in" in r.stdout and "graph-rag-notes-with-a-long-name" in r.stdout


# -- one way to fail --------------------------------------------------------------------------
ERRORS = [
    (["ask"], 2, "error: Missing argument 'question'. (see 'krag ask --help')"),
    (["ask", "x", "--max-hops", "4"], 2, "error: max_hops must be 1..3, got 4."),
    (["nonsense"], 2, "error: No such command 'nonsense'. (see 'krag --help')"),
    (["ingest", "--workers", "0", "."], 2, "error: Invalid value for '--workers': "),
    (["ingest", "nope.md"], 2, "error: no such file or folder: nope.md"),
    (["ingest", "--batch-size", "0", "."], 2, "error: Invalid value for '--batch-size': "),
    (["mcp", "--transport", "pigeon"], 2, "error: --transport must be stdio or http"),
    (["ui", "--port", "70000"], 2, "error: Invalid value for '--port': "),
    (["eval", "multihop", "--corpus", "c.jsonl", "--questions", "q.jsonl"], 2,
     "error: c.jsonl: no such file"),
    (["eval", "extraction", "--redocred", "r.jsonl", "--chunk-size", "5"], 2,
     "error: --chunk-size must be 0 or between 100 and 20000"),
]


@pytest.mark.parametrize(("args", "code", "start"), ERRORS, ids=[" ".join(a) for a, _, _ in
                                                                  ERRORS])
def test_every_error_is_one_line_starting_with_error(
        capsys: pytest.CaptureFixture[str], args: list[str], code: int, start: str) -> None:
    got, out, err = cli(capsys, *args)
    assert (got, err.splitlines()[:1]) == (code, [err.strip()]), err
    assert err.startswith(start), err
    assert "Traceback" not in err + out


def test_store_and_settings_errors_are_one_line(
        capsys: pytest.CaptureFixture[str], db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = cli(capsys, "ingest", ".", "--extraction-model", "gpt")
    assert code == 2 and err.splitlines() == [
        "Ingesting . …", "error: KRAG_EXTRACTION_MODEL: must be 'ollama:<model>', "
        "'openai:<model>' or 'none' (got 'gpt')"]
    code, _, err = cli(capsys, "ingest", ".", "--chunk-size", "50")
    assert code == 2 and err.splitlines()[1:] == [
        "error: --chunk-size must be between 100 and 20000 (got 50)"]
    code, _, err = cli(capsys, "ingest", ".", "--chunk-overlap", "600")
    assert code == 2 and err.splitlines()[1:] == [
        "error: --chunk-overlap must be >= 0 and less than half the chunk size (500) (got 600)"]
    monkeypatch.setenv("KRAG_CHAT_MODEL", "chatgpt")
    code, _, err = cli(capsys, "ask", "who?")
    assert code == 2 and err.strip().startswith("error: KRAG_CHAT_MODEL: must be")
    monkeypatch.setenv("KRAG_CHAT_MODEL", "none")
    monkeypatch.setenv("KRAG_DATABASE_URL", db_url)
    code, _, err = cli(capsys, "remove", "no-such-source")
    assert code == 2 and err.startswith("error: no source 'no-such-source'"), err
    assert len(err.splitlines()) == 1
    code, _, err = cli(capsys, "scope", "set", "a", "--parent", "a")
    assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, err


def test_an_unexpected_failure_is_one_line_and_verbose_shows_the_cause(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from graph_flows.services import doctor

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("the flux capacitor is empty\nsecond line")

    monkeypatch.setattr(doctor, "run_doctor", broken)
    code, _, err = cli(capsys, "doctor")
    assert code == 1
    assert err == ("error: unexpected RuntimeError: the flux capacitor is empty "
                   "(krag --verbose shows the traceback)\n")
    code, _, err = cli(capsys, "--verbose", "doctor")
    assert code == 1 and err.startswith("error: unexpected RuntimeError")
    assert "Traceback" in err and "the flux capacitor" in err
