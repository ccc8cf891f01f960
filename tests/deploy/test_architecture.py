"""The architecture rules of docs/ARCHITECTURE.md hold: import-linter contracts, no import
cycles between modules (function-level imports included), no SQL engine outside storage/."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ui", "graph_flows", "storage", "prompts", "bench", "tests")
PRODUCT = ("ui", "graph_flows", "bench")


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
    return cycles


def test_cycle_finder_sees_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_no_import_cycles_between_modules(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert import_cycles(graph) == []


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_no_sql_engine_outside_storage() -> None:
    offenders = []
    for package in (*PRODUCT, "tests"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
                          if isinstance(node, ast.Attribute) and node.attr == "engine"]
    assert offenders == []
