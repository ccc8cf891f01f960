"""Fragments of sentences stored as names in a graph (issue 40 item 3).

Usage (the scope ``krag eval multihop --json`` printed; its data dir)::

    KRAG_DATA_DIR=/tmp/names-new/krag python -m bench.fragment_names --scope eval-2ac78eb11230

Prints JSON: ``entities``; ``fragments`` (names that
:func:`graph_flows.shared.fragments.is_fragment` calls fragments, no answer given) and their
``share``; of them ``numbers`` (bare numbers: dates and years the graph keeps as values)
and ``words`` (the rest: function words at an end, a naming participle at the end, a
possessive end, unbalanced quotes), with up to 20 ``examples`` of the latter;
``relation_texts`` (stated predicates of current relations) and ``relation_texts_punctuated``
(those starting or ending with punctuation), with examples.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from graph_flows.shared.fragments import is_fragment, is_number


def count(names: list[str], said: list[str], examples: int = 20) -> dict[str, Any]:
    """The counts of the module docstring over entity ``names`` and relation texts ``said``."""
    fragments = [n for n in names if is_fragment(n)]
    words = [n for n in fragments if not is_number(n)]
    punctuated = [p for p in said if p and not (p[0].isalnum() and p[-1].isalnum())]
    return {
        "entities": len(names), "fragments": len(fragments),
        "share": round(len(fragments) / len(names), 4) if names else 0.0,
        "numbers": len(fragments) - len(words), "words": len(words),
        "words_share": round(len(words) / len(names), 4) if names else 0.0,
        "examples": [n for n, _ in Counter(words).most_common(examples)],
        "relation_texts": len(said), "relation_texts_punctuated": len(punctuated),
        "punctuated_examples": [p for p, _ in Counter(punctuated).most_common(examples)],
    }


def main() -> None:
    """Count the fragments of one scope of the configured store."""
    from graph_flows.shared.scoped import scope_access
    from graph_flows.shared.settings import load_settings
    from graph_flows.shared.store import open_store

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scope", required=True, help="scope of the graph to count")
    args = parser.parse_args()
    store = open_store(load_settings(chat_model="none"), check_embedding=False)
    try:
        with scope_access(args.scope, store):
            names, said = store.graph_names(args.scope)
    finally:
        store.close()
    print(json.dumps({"scope": args.scope, **count(names, said)}))


if __name__ == "__main__":
    main()
