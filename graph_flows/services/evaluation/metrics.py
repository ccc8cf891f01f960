"""Pure scoring functions: passage recall, MRR, answer-in-context, P/R/F1, percentiles."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

RECALL_KS = (2, 5, 10)


def recall_at(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share of the gold passages found in the top ``k`` of ``ranked``."""
    gold_set = set(gold)
    if not gold_set:
        return 0.0
    return len(gold_set & set(ranked[:k])) / len(gold_set)


def all_supported(ranked: Sequence[str], gold: Iterable[str], k: int = 10) -> bool:
    """Whether every gold passage is in the top ``k``."""
    return set(gold) <= set(ranked[:k])


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str]) -> float:
    """1 / rank of the first gold passage (0 when none is ranked)."""
    gold_set = set(gold)
    for rank, item in enumerate(ranked, 1):
        if item in gold_set:
            return 1.0 / rank
    return 0.0


def answer_in(text: str, answers: Iterable[str]) -> bool:
    """Whether any answer occurs in ``text``, case-insensitively and whitespace-folded."""
    folded = " ".join(text.casefold().split())
    return any(" ".join(a.casefold().split()) in folded for a in answers if a.strip())


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation (numpy's default)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def prf(tp: int, predicted: int, gold: int) -> dict[str, float]:
    """Precision, recall and F1 (0 when undefined), rounded to 4 places."""
    p = tp / predicted if predicted else 0.0
    r = tp / gold if gold else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"P": round(p, 4), "R": round(r, 4), "F1": round(f1, 4)}


@dataclass
class RetrievalScore:
    """Accumulates per-question retrieval results of one system."""

    recalls: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in RECALL_KS})
    all_supp: list[bool] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)
    answered: list[bool] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    in_answer: list[bool] = field(default_factory=list)

    def add(self, ranked: Sequence[str], gold: Sequence[str], answer_found: bool,
            latency_ms: float, answer_in_answer: bool | None = None) -> None:
        """Score one question; ``answer_in_answer``: whether the gold answer occurs in the
        system's own answer text (None for a system that writes no answer)."""
        if answer_in_answer is not None:
            self.in_answer.append(answer_in_answer)
        for k in RECALL_KS:
            self.recalls[k].append(recall_at(ranked, gold, k))
        self.all_supp.append(all_supported(ranked, gold, 10))
        self.rr.append(reciprocal_rank(ranked, gold))
        self.answered.append(answer_found)
        self.latencies_ms.append(latency_ms)

    def as_dict(self) -> dict[str, object]:
        """``{"R@2", "R@5", "R@10", "AllSupp@10", "MRR", "Ans@ctx", "latency_ms"}``, and
        ``"Ans@answer"`` when answers were scored."""
        out: dict[str, object] = {f"R@{k}": _mean(v) for k, v in self.recalls.items()}
        out["AllSupp@10"] = _mean([float(b) for b in self.all_supp])
        out["MRR"] = _mean(self.rr)
        out["Ans@ctx"] = _mean([float(b) for b in self.answered])
        if self.in_answer:
            out["Ans@answer"] = _mean([float(b) for b in self.in_answer])
        out["latency_ms"] = {"p50": round(percentile(self.latencies_ms, 50), 1),
                             "p95": round(percentile(self.latencies_ms, 95), 1)}
        return out


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0
