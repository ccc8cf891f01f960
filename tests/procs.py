"""Helpers for tests that run `krag` or start servers as subprocesses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, wait up to 10 s, then SIGKILL."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_for_port(proc: subprocess.Popen, port: int, timeout_s: float = 90) -> None:
    """Wait until 127.0.0.1:``port`` accepts a connection; fail with the process's stderr
    if it exits first, or with "server did not start" after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)


@contextmanager
def mcp_http_server(env: Mapping[str, str], cwd: Path, *args: str,
                    timeout_s: float = 90) -> Iterator[str]:
    """`krag mcp --transport http --port P ARGS` as a subprocess, started and accepting
    connections: its URL (``http://127.0.0.1:P/mcp``); stopped on exit."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ui.cli.app", "mcp", "--transport", "http", "--port",
         str(port), *args], env=dict(env), cwd=cwd, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    try:
        wait_for_port(proc, port, timeout_s)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run `krag ARGS` in this process: (exit code, stdout, stderr)."""
    from ui.cli.app import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


ROOT = Path(__file__).resolve().parents[1]


def krag_env(db_url: str, tmp_path: Path) -> dict[str, str]:
    """Environment of a krag subprocess on ``db_url`` in no-LLM mode: the caller's KRAG_*
    settings dropped, its data dir under ``tmp_path``, the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    env.update(KRAG_DATABASE_URL=db_url, KRAG_CHAT_MODEL="none",
               KRAG_EMBEDDING_MODEL="local:minilm", KRAG_DATA_DIR=str(tmp_path / "krag"),
               PYTHONPATH=str(ROOT))
    return env
