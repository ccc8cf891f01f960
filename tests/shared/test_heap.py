"""The loaded objects of a serving process are frozen out of garbage collection
(graph_flows.shared.heap): by the helper, when the process default resources are built, and
when the web UI builds its cached resources."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from graph_flows.shared import heap
from graph_flows.shared import resources as runtime
from ui.web import backend


class Loaded:
    """A stand-in for something a process loads once (a container the collector tracks)."""


def tracked(obj: object) -> bool:
    """Whether the collector still walks ``obj`` (frozen objects are left out)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Each test starts and ends with nothing frozen (the rest of the suite collects as
    usual)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_freeze_loaded_moves_live_objects_out_of_collection(unfrozen: None) -> None:
    loaded = Loaded()
    assert tracked(loaded)
    frozen = heap.freeze_loaded()
    # frozen objects that die later (another thread's, say) leave the count: never more
    assert frozen > 0 and 0 < gc.get_freeze_count() <= frozen
    assert not tracked(loaded)
    made_later = Loaded()  # objects made afterwards are collected as before
    assert tracked(made_later)


def test_garbage_is_collected_before_freezing(unfrozen: None) -> None:
    cycle = Loaded()
    cycle.self = cycle  # type: ignore[attr-defined]
    gone = weakref.ref(cycle)
    del cycle
    heap.freeze_loaded()
    assert gone() is None  # collected, not frozen for the life of the process


def test_process_default_resources_freeze_what_is_loaded(
        unfrozen: None, monkeypatch: pytest.MonkeyPatch) -> None:
    built = SimpleNamespace(store=None, marker=Loaded())
    monkeypatch.setattr(runtime, "build_resources", lambda: built)
    monkeypatch.setattr(runtime, "_default", None)
    assert runtime.get_resources() is built
    assert gc.get_freeze_count() > 0 and not tracked(built.marker)
    gc.unfreeze()
    assert runtime.get_resources() is built  # built and frozen once, then reused
    assert gc.get_freeze_count() == 0


def test_web_ui_resources_freeze_what_is_loaded(
        unfrozen: None, monkeypatch: pytest.MonkeyPatch) -> None:
    built = SimpleNamespace(settings=None, store=None, marker=Loaded())
    monkeypatch.setattr(backend, "build_resources", lambda settings: built)
    # warming (graph_flows.services.warm, its own tests) loads real models: not this test's
    monkeypatch.setattr(backend.warm, "warm_models", lambda settings: {})
    monkeypatch.setattr(backend.warm, "warm_query", lambda resources: {})
    assert backend.open_resources("key") is built
    assert gc.get_freeze_count() > 0 and not tracked(built.marker)
