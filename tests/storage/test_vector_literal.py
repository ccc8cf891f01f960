"""storage.bulk.vector_literal: the pgvector text of a vector, number by number ``%.7g``."""

from __future__ import annotations

import numpy as np

from storage.bulk import vector_literal


def test_the_text_is_each_number_at_seven_significant_digits() -> None:
    rng = np.random.default_rng(7)
    for vec in (rng.standard_normal(384).tolist(), (rng.standard_normal(384) * 1e-6).tolist(),
                rng.standard_normal(5).astype(np.float32), [1, 0, -2], [0.0, -0.0, 1e30]):
        expected = "[" + ",".join(f"{float(x):.7g}" for x in vec) + "]"
        assert vector_literal(vec) == expected
    assert vector_literal(None) is None and vector_literal([]) == "[]"
