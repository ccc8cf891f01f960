"""Progress of `krag ingest`: a rich bar on a terminal, a plain line every few seconds on a pipe.

Both show the same compact text (it fits 80 columns): chunks done of all, failed, elapsed
time, an ETA, then entities and relations when they fit. The ETA comes from this run's own
average rate, shown once a few batches have finished (a rate from one batch is mostly
start-up time). The services report
snapshots through a callback (:func:`graph_flows.services.ingest.ingest`); this module only
renders them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

DEFAULT_EVERY_S = 10.0
LINE_WIDTH = 80  # a plain progress line (log files, CI) stays within 80 columns


def clock(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class Eta:
    """Remaining seconds at the rate measured from the first finished batch on (start-up
    time, model loading and the first batch excluded), once ``batches`` more finished."""

    batches: int = 2
    first: tuple[float, int] | None = None  # (time, done) when the first batch finished
    last_done: int | None = None
    increases: int = 0

    def update(self, done: int, total: int, now: float) -> float | None:
        """Seconds left after ``done`` of ``total`` at ``now`` (None: not known yet)."""
        if self.last_done is None:
            self.last_done = done  # chunks done before this run are not its work
        if done > self.last_done:
            self.increases += 1
            self.last_done = done
            if self.first is None:
                self.first = (now, done)
        left = max(total - done, 0)
        if total and not left:
            return 0.0
        if self.first is None or self.increases <= self.batches - 1:
            return None
        since, done_then = self.first
        if done <= done_then or now <= since:
            return None
        return left * (now - since) / (done - done_then)


@dataclass
class Snapshot:
    """The numbers one progress line shows."""

    done: int = 0
    total: int = 0
    failed: int = 0
    entities: int = 0
    relations: int = 0
    elapsed: float = 0.0
    eta: float | None = None

    def text(self, width: int = 80) -> str:
        """``12/340 chunks (3%), 1 failed, 0:42 elapsed, ETA 5:10; 120 entities, 80
        relations``, the graph part left out when the line would be wider than ``width``."""
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        failed = f", {self.failed} failed" if self.failed else ""
        eta = clock(self.eta) if self.eta is not None else "--"
        core = (f"{self.done}/{self.total or '?'} chunks{share}{failed}, "
                f"{clock(self.elapsed)} elapsed, ETA {eta}")
        full = f"{core}; {self.entities} entities, {self.relations} relations"
        return full if len(full) <= width else core


@dataclass
class IngestProgress:
    """Renders ingest snapshots on ``console``: a live bar when it is a terminal, else a
    plain line at most every ``every_s`` seconds (and one at the end). A context manager;
    :meth:`update` is the services' ``on_progress`` callback (called from a thread)."""

    console: Console
    every_s: float = DEFAULT_EVERY_S
    enabled: bool = True
    started: float = field(default_factory=time.monotonic)
    last: Snapshot = field(default_factory=Snapshot)
    raw: dict[str, int] = field(default_factory=dict)
    _eta: Eta | None = None
    _bar: Progress | None = None
    _task: Any = None
    _printed_at: float | None = None
    _printed: tuple[int, ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> IngestProgress:
        self._eta = Eta()
        if self.enabled and self.console.is_terminal:
            self._bar = Progress(BarColumn(bar_width=None), TextColumn("{task.description}"),
                                 console=self.console, expand=True)
            self._bar.start()
            self._task = self._bar.add_task("starting…", total=None)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self.enabled and kind is None and self._printed_at is not None:
            self._print(self.last, final=True)  # the final numbers, unless just printed

    def update(self, snap: dict[str, int]) -> None:
        """Take one snapshot of the run (see :class:`graph_flows.services.ingest._Poller`)."""
        now = time.monotonic()
        done, total = snap["completed"] + snap["failed"], snap["total"]
        with self._lock:
            self.raw = dict(snap)
            eta = self._eta.update(done, total, now) if self._eta else None
            self.last = Snapshot(done, total, snap["failed"], snap["entities"],
                                 snap["relations"], now - self.started, eta)
            if not self.enabled:
                return
            if self._bar is not None:
                self._bar.update(self._task, total=total or None, completed=done,
                                 description=self.last.text(self.console.width - 12))
            elif self._printed_at is None or now - self._printed_at >= self.every_s:
                self._printed_at = now
                self._print(self.last)

    def _print(self, snap: Snapshot, final: bool = False) -> None:
        counts = (snap.done, snap.total, snap.failed, snap.entities, snap.relations)
        if final and counts == self._printed:
            return  # the last line already says it (only the clock moved)
        self._printed = counts
        self.console.print("ingest: " + snap.text(LINE_WIDTH - 8), markup=False,
                           highlight=False, soft_wrap=True)
