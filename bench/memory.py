"""Memory of the process measuring itself (for the benchmarks' reports): imported by
``bench.retrieval_latency`` (its peak RSS column), not run by itself."""

from __future__ import annotations

import contextlib
import resource
from pathlib import Path


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB: ``VmHWM`` of ``/proc/self/status``.

    Not ``getrusage``'s ``ru_maxrss`` where ``VmHWM`` is readable: Linux carries
    ``ru_maxrss`` over ``fork`` and ``exec``, so a process spawned by a parent that once held
    a gigabyte (the benchmark's generated graph) reports that gigabyte as its own peak; the
    high-water mark of its own memory map starts at ``exec``."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def rss_mb() -> dict[str, float]:
    """``maxrss_mb`` (:func:`peak_rss_mb`) and, with psutil, the current ``rss_mb``."""
    out = {"maxrss_mb": peak_rss_mb()}
    with contextlib.suppress(Exception):
        import psutil

        out["rss_mb"] = round(psutil.Process().memory_info().rss / 2**20, 1)
    return out
