"""SIGTERM to `krag ui`, `krag mcp` and `langgraph dev` releases the embedded PostgreSQL
handle: the process exits and, being the last user, the postmaster stops with it.

Each server runs against its own temporary KRAG_DATA_DIR (so its own embedded cluster)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from storage.claims import pid_alive
from tests.procs import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    env.update(KRAG_DATA_DIR=str(data_dir), KRAG_CHAT_MODEL="none",
               KRAG_EMBEDDING_MODEL="local:minilm", KRAG_EMBEDDING_DIM="384",
               LANGGRAPH_CLI_NO_ANALYTICS="1", PYTHONPATH=str(ROOT))
    return env


def _wait_for(check: Callable[[], bool], proc: subprocess.Popen, log: Path, what: str,
              timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen (exit {proc.poll()}):\n{log.read_text()}")
        time.sleep(0.3)


def _http_ok(url: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return httpx.get(url, timeout=2).status_code < 500
        except httpx.HTTPError:
            return False
    return check


def _postmaster_pid(data_dir: Path) -> int | None:
    """The running postmaster's pid; None also while initdb's single-user backend holds the
    lock file (it writes its pid negated, then the real server starts)."""
    try:
        pid = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid > 0 else None


def _terminate_and_check(proc: subprocess.Popen, data_dir: Path, log: Path) -> None:
    """SIGTERM the server: it exits within 20 s and its postmaster is gone within 20 s."""
    postmaster = _postmaster_pid(data_dir)
    assert postmaster is not None and pid_alive(postmaster)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running 20 s after SIGTERM:\n{log.read_text()}")
    deadline = time.monotonic() + 20
    while pid_alive(postmaster) and time.monotonic() < deadline:
        time.sleep(0.3)
    alive = pid_alive(postmaster)
    if alive:  # do not leave the server behind for the next test
        os.kill(postmaster, signal.SIGTERM)
    assert not alive, f"postmaster {postmaster} still runs:\n{log.read_text()}"
    assert not (data_dir / "pg" / "postmaster.pid").exists()
    assert (data_dir / "pg" / ".handle_pids.json").read_text().strip() == "[]"


def _start(cmd: list[str], data_dir: Path, log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=_env(data_dir), stdout=out,
                                stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if proc.stdin is not None:
        proc.stdin.close()


def test_sigterm_to_krag_ui_stops_the_embedded_server(tmp_path: Path) -> None:
    """The store opens in the Streamlit child on the first page load (a plain HTTP GET does
    not run the script, so a headless Chromium opens the page)."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    data, log, port = tmp_path / "data", tmp_path / "ui.log", free_port()
    proc = _start([str(BIN / "krag"), "ui", "--port", str(port)], data, log)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(_http_ok(f"{url}/_stcore/health"), proc, log, "streamlit health")
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                        args=["--no-sandbox", "--disable-gpu"])
            try:
                browser.new_page().goto(url)
                _wait_for(lambda: _postmaster_pid(data) is not None, proc, log,
                          "embedded postmaster start")
                time.sleep(1)  # let the script run finish opening the store
            finally:
                browser.close()
        _terminate_and_check(proc, data, log)
    finally:
        _stop(proc)


def test_sigterm_to_krag_mcp_http_stops_the_embedded_server(tmp_path: Path) -> None:
    data, log, port = tmp_path / "data", tmp_path / "mcp.log", free_port()
    proc = _start([str(BIN / "krag"), "mcp", "--transport", "http", "--port", str(port)],
                  data, log)
    try:
        _wait_for(_http_ok(f"http://127.0.0.1:{port}/mcp"), proc, log, "MCP server start")
        _terminate_and_check(proc, data, log)
    finally:
        _stop(proc)


@pytest.mark.parametrize("settle_s", [2.0, 0.0], ids=["store_open", "while_its_store_opens"])
def test_sigterm_to_krag_mcp_stdio_stops_the_embedded_server(tmp_path: Path,
                                                             settle_s: float) -> None:
    """stdio: stdin stays open (a client that is still connected) when SIGTERM arrives,
    ``settle_s`` after the postmaster runs: 2 s, the store open (migrations); 0, while the
    process still opens its store (seconds, longer on a busy machine, where 2 s ran into
    this window): the store opens holding the default resources' lock, which the signal
    handler, running on the same thread, waited for forever (the process hung)."""
    data, log = tmp_path / "data", tmp_path / "mcp.log"
    with log.open("w") as err:
        proc = subprocess.Popen([str(BIN / "krag"), "mcp"], cwd=ROOT, env=_env(data),
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
    try:
        _wait_for(lambda: _postmaster_pid(data) is not None, proc, log,
                  "embedded postmaster start")
        time.sleep(settle_s)
        _terminate_and_check(proc, data, log)
    finally:
        _stop(proc)


def test_sigterm_to_langgraph_dev_stops_the_embedded_server(tmp_path: Path) -> None:
    """The graphs open the store on their first run; the shutdown hook of the http app in
    langgraph.json releases it (uvicorn re-raises SIGTERM without running atexit)."""
    cli = BIN / "langgraph"
    if not cli.exists():
        pytest.skip("langgraph-cli is not installed in this environment")
    data, log, port = tmp_path / "data", tmp_path / "langgraph.log", free_port()
    proc = _start([str(cli), "dev", "--port", str(port), "--no-browser", "--no-reload",
                   "--config", str(ROOT / "langgraph.json")], data, log)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(_http_ok(f"{base}/ok"), proc, log, "langgraph dev start")
        out = httpx.post(f"{base}/runs/wait", timeout=120, json={
            "assistant_id": "query", "input": {"query": "What did Ada Lovelace write?"}})
        assert out.status_code == 200, out.text
        _terminate_and_check(proc, data, log)
    finally:
        _stop(proc)
