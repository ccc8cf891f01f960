"""``python -m bench``: the benchmark suite, one line per script, and how to run each.

Reads each script's module docstring (nothing is imported or run). The commands that produce
the numbers of docs/BENCHMARKS.md are in its "How to reproduce" list.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def suite() -> list[tuple[str, str]]:
    """(module name, its docstring's first paragraph, cut at 100 characters) per script."""
    rows = []
    for path in sorted(HERE.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
        first = " ".join(doc.split("\n\n", 1)[0].split()) or "(no docstring)"
        rows.append((path.stem, first if len(first) <= 100 else first[:99] + "…"))
    return rows


def main() -> int:
    rows = suite()
    width = max(len(name) for name, _ in rows)
    print("The benchmark suite (docs/BENCHMARKS.md, 'How to reproduce', names the command of "
          "each measure):")
    for name, first in rows:
        print(f"  bench.{name:<{width}}  {first}")
    print("Usage of one: python -m bench.<name> --help")
    return 0


if __name__ == "__main__":
    sys.exit(main())
