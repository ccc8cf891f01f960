"""Helpers for tests that run `krag` or start servers as subprocesses."""

from __future__ import annotations

import socket
import subprocess

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
