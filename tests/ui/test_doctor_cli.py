"""`krag doctor`, settings errors and the embedded cluster's crash handling, as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graph_flows.shared.settings import SettingsError, load_settings
from storage import EmbeddedPostgresError, start_embedded
from storage.embedded import cluster_dir, prune_dead_pids

KRAG = [sys.executable, "-m", "ui.cli.app"]


def run_krag(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    full_env.update(env)
    return subprocess.run(KRAG + args, env=full_env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_doctor_reports_database_and_no_llm_mode(db_url: str, tmp_path: Path) -> None:
    env = {"KRAG_DATABASE_URL": db_url, "KRAG_CHAT_MODEL": "ollama:qwen2.5:7b-instruct",
           "KRAG_OLLAMA_HOST": "http://127.0.0.1:9", "KRAG_OPENAI_API_KEY": "sk-very-secret"}
    r = run_krag(["doctor", "--json"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["database"]["reachable"] is True
    assert report["database"]["extensions"].keys() == {"vector", "pg_trgm"}
    head = max(p.name[:4] for p in (Path(__file__).resolve().parents[2] / "storage" /
                                    "migrations" / "versions").glob("0*.py"))
    assert report["database"]["schema_revision"] == head
    assert report["providers"]["chat"]["ok"] is False
    assert report["providers"]["embeddings"]["ok"] is True
    assert report["mode"].startswith("no-LLM mode")
    assert "sk-very-secret" not in r.stdout + r.stderr
    assert report["settings"]["openai_api_key"] == "****"


def test_invalid_setting_is_one_line_naming_it(tmp_path: Path) -> None:
    r = run_krag(["doctor"], {"KRAG_CHAT_MODEL": "gpt4"}, tmp_path)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == ["error: KRAG_CHAT_MODEL: must be 'ollama:<model>', 'openai:<model>' or "
                     "'none' (got 'gpt4')"]


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("embedding_model", "bert", "KRAG_EMBEDDING_MODEL"),
    ("database_url", "mysql://x", "KRAG_DATABASE_URL"),
    ("pool_size", "0", "KRAG_POOL_SIZE"),
    ("openai_api_key", None, None),
])
def test_settings_errors_name_the_setting(field: str, value, needle, monkeypatch) -> None:
    for key in list(os.environ):
        if key.startswith("KRAG_"):
            monkeypatch.delenv(key)
    if value is None:
        assert load_settings(_env_file=None).openai_api_key is None
        return
    with pytest.raises(SettingsError) as err:
        load_settings(_env_file=None, **{field: value})
    assert str(err.value).startswith(needle) and "\n" not in str(err.value)


def test_data_dir_holding_something_else_is_refused(tmp_path: Path) -> None:
    pg = cluster_dir(tmp_path)
    pg.mkdir(parents=True)
    (pg / "notes.txt").write_text("mine")
    with pytest.raises(EmbeddedPostgresError, match="not a PostgreSQL cluster"):
        start_embedded(tmp_path)
    assert (pg / "notes.txt").read_text() == "mine"


_HOLDER = """
import sys, time
from storage import start_embedded
print(start_embedded(sys.argv[1]), flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_cluster_left_by_a_killed_process_is_reused_safely(tmp_path: Path) -> None:
    """A SIGKILLed holder leaves its PID registered; the next start prunes it and reuses
    the running cluster; data written before survives."""
    import psycopg

    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    url = holder.stdout.readline().strip()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE survivor (x int)")
        conn.execute("INSERT INTO survivor VALUES (42)")
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert holder.pid in json.loads((cluster_dir(tmp_path) / ".handle_pids.json").read_text())
    assert holder.pid not in prune_dead_pids(cluster_dir(tmp_path))
    # kill the postmaster too (crash), then start again: crash recovery, same data
    pid = int((cluster_dir(tmp_path) / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    url2 = start_embedded(tmp_path)
    with psycopg.connect(url2) as conn:
        assert conn.execute("SELECT x FROM survivor").fetchone() == (42,)
