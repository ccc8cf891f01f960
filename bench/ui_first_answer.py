"""How long the first question takes after `krag ui` starts, seen from a real browser.

Usage::

    KRAG_DATA_DIR=/tmp/uiresp-bench/krag KRAG_CHAT_MODEL=none python -m bench.ui_first_answer \\
        --checkout /tmp/base --checkout . [--runs 3] [--question "..."] [--json]

For each checkout (alternated run by run, so machine noise falls on both alike) it starts
``krag ui`` from that checkout (``python -m ui.cli.app ui``, the checkout first on the path)
on a free port against the environment's knowledge base, opens the page in headless
Chromium (``/usr/bin/chromium``, Playwright) as soon as the server answers its health check,
and records, in seconds: ``server_up`` (process start to a healthy server), ``page_ready``
(navigation to the chat input shown), ``first_token`` (Enter to the first character of the
answer) and ``answer_done`` (Enter to the answer's "Details" expander), then
``second_token`` (the same question asked again: the floor, everything loaded, at the
machine's load of the moment), with the 1-minute load average before and after the run.
A fresh process per run: every run's first question is a first question. The ingested
knowledge base is only read.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
QUESTION = "Which query language was based on Codd's relational calculus?"
TOKEN = """(n) => { const m = document.querySelectorAll('[data-testid=stChatMessageContent]');
    return m.length > n && m[n].innerText.trim().length > 0; }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_ui(checkout: Path, port: int, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    """`krag ui` of ``checkout`` on ``port``; returns the process and the seconds until its
    health check answered."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ui.cli.app", "ui", "--port", str(port)],
                            cwd=checkout, env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = t0 + 180
    while time.perf_counter() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                        timeout=2) as r:
                if r.status == 200:
                    return proc, time.perf_counter() - t0
        except OSError:
            time.sleep(0.1)
    stop(proc)
    raise RuntimeError(f"krag ui of {checkout} did not start:\n{log.read_text()[-2000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group this script started (krag ui and its Streamlit child)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def ask(page: Any, question: str, n: int) -> tuple[float, float]:
    """Ask ``question``; seconds to the first character of the answer (chat message ``n``)
    and to its "Details" expander."""
    box = page.get_by_test_id("stChatInput").locator("textarea")
    box.fill(question)
    t_ask = time.perf_counter()
    box.press("Enter")
    page.wait_for_function(TOKEN, arg=n, timeout=180_000, polling="raf")
    first = time.perf_counter() - t_ask
    page.get_by_test_id("stChatMessage").nth(n).get_by_text("Details").wait_for(
        timeout=180_000)
    return first, time.perf_counter() - t_ask


def one_run(checkout: Path, question: str, log: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()[0]
    port = free_port()
    proc, server_up = start_ui(checkout, port, log)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                t_nav = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}")
                box = page.get_by_test_id("stChatInput").locator("textarea")
                box.wait_for(timeout=180_000)
                page_ready = time.perf_counter() - t_nav
                first_token, answer_done = ask(page, question, 1)
                second_token, _ = ask(page, question, 3)
            finally:
                browser.close()
    finally:
        stop(proc)
    return {"checkout": str(checkout), "server_up": round(server_up, 2),
            "page_ready": round(page_ready, 2), "first_token": round(first_token, 2),
            "answer_done": round(answer_done, 2), "second_token": round(second_token, 2),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}


def summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for checkout in dict.fromkeys(r["checkout"] for r in runs):
        mine = [r for r in runs if r["checkout"] == checkout]
        out[checkout] = {k: round(statistics.median(r[k] for r in mine), 2)
                         for k in ("server_up", "page_ready", "first_token", "answer_done",
                                   "second_token", "load_before")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", action="append", type=Path, required=True,
                    help="a source tree to run `krag ui` from (repeat to compare)")
    ap.add_argument("--runs", type=int, default=3, help="runs per checkout")
    ap.add_argument("--question", default=QUESTION)
    ap.add_argument("--log", type=Path, default=Path("/tmp/ui_first_answer.log"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    runs = []
    for i in range(args.runs):
        for checkout in args.checkout:
            run = one_run(checkout.resolve(), args.question, args.log)
            runs.append(run)
            print(f"run {i + 1}: " + json.dumps(run), file=sys.stderr, flush=True)
    report = {"question": args.question, "runs": runs, "median": summary(runs)}
    print(json.dumps(report, indent=2) if args.json else json.dumps(report["median"], indent=2))


if __name__ == "__main__":
    main()
