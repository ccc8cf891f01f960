"""bench/ is the benchmark suite and nothing else: every script is named by a command of
docs/BENCHMARKS.md's "How to reproduce" or imported by one that is, and says in its
docstring how it is run; ``python -m bench`` lists them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def scripts() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text("utf-8")) for p in sorted(BENCH.glob("*.py"))
            if not p.stem.startswith("_")}


def bench_imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench"):
            names |= {node.module.split(".", 1)[1]} if "." in (node.module or "") else {
                alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name.split(".", 1)[1] for a in node.names if a.name.startswith("bench.")}
    return names


def test_every_script_is_reproduced_or_imported_by_one_that_is() -> None:
    text = (ROOT / "docs" / "BENCHMARKS.md").read_text("utf-8")
    reproduce = text[text.index("## How to reproduce"):text.index("## The record")]
    named = {m for m in scripts() if re.search(rf"bench[./]{m}\b", reproduce)}
    trees = scripts()
    reached = set(named)
    todo = list(named)
    while todo:
        for dep in bench_imports(trees[todo.pop()]) & trees.keys():
            if dep not in reached:
                reached.add(dep)
                todo.append(dep)
    assert trees.keys() - reached == set(), "scripts no reproduce command needs"


def test_every_script_says_what_it_measures_and_how_to_run_it() -> None:
    for name, tree in scripts().items():
        doc = ast.get_docstring(tree) or ""
        assert len(doc) > 40, f"bench/{name}.py has no docstring worth the name"
        runs = f"bench.{name}" in doc or f"bench/{name}.py" in doc or "imported by" in doc
        assert runs, f"bench/{name}.py: its docstring gives no command line"


def test_python_m_bench_lists_the_suite() -> None:
    out = subprocess.run([sys.executable, "-m", "bench"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for name in scripts():
        assert f"bench.{name}" in out.stdout
