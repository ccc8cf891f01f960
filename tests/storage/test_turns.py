"""Store turns (storage.turns) on the real PostgreSQL: batches written in claim order."""

from __future__ import annotations

import contextvars
import socket
import subprocess
import sys
import threading
import time

from sqlalchemy import text

from storage import DocumentIn, KnowledgeStore, ids
from storage.models import ChunkOutcome


def seed(store: KnowledgeStore, n: int) -> None:
    texts = [f"chunk {i}" for i in range(n)]
    store.sync_document(DocumentIn(scope="default", source="src", uri="a.md",
                                   content_hash=ids.content_hash("|".join(texts))), texts)


def first_of(batch: list) -> tuple[str, int]:
    return min((c.document_id, c.ordinal) for c in batch)


def enter_in_thread(store: KnowledgeStore, batch: list, worker: str,
                    stale_after_s: float = 600.0) -> tuple[threading.Thread, threading.Event]:
    """A thread taking the turn for ``batch`` (as ``worker``); the event is set once in."""
    entered = threading.Event()

    def take() -> None:
        with store.store_turn(scope="default", source="src", first=first_of(batch),
                              worker=worker, stale_after_s=stale_after_s):
            entered.set()

    # the store's access (a context variable) goes with the thread, as a node's does
    thread = threading.Thread(target=contextvars.copy_context().run, args=(take,), daemon=True)
    thread.start()
    return thread, entered


def complete(store: KnowledgeStore, batch: list) -> None:
    store.write_graph([], [], completed=[ChunkOutcome(c.id, 0, 0, {}) for c in batch])


def test_a_later_batch_waits_for_the_earlier_one_and_for_the_turn(
        store: KnowledgeStore) -> None:
    seed(store, 4)
    first = store.claim_chunks(2, "host-a:1")
    second = store.claim_chunks(2, "host-b:2")
    assert first_of(first) < first_of(second)
    # the later batch waits while the earlier one is claimed, the turn being free
    thread, entered = enter_in_thread(store, second, "host-b:2")
    assert not entered.wait(0.5)
    # the earlier batch takes its turn; the later one still waits
    with store.store_turn(scope="default", source="src", first=first_of(first),
                          worker="host-a:1", stale_after_s=600) as turn:
        assert turn.looks >= 1
        complete(store, first)  # chunks done, but the turn is still held: still waiting
        assert not entered.wait(0.3)
    assert entered.wait(10)  # turn given back: the later batch goes
    thread.join(10)


def test_claims_of_the_batch_itself_and_of_later_batches_do_not_hold_it_back(
        store: KnowledgeStore) -> None:
    seed(store, 4)
    first = store.claim_chunks(2, "host-a:1")
    store.claim_chunks(2, "host-b:2")
    thread, entered = enter_in_thread(store, first, "host-a:1")
    assert entered.wait(10)
    thread.join(10)


def test_a_dead_local_process_or_a_stale_claim_does_not_hold_the_turn(
        store: KnowledgeStore) -> None:
    seed(store, 6)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    first = store.claim_chunks(2, f"{socket.gethostname()}:{int(dead.stdout)}")
    second = store.claim_chunks(2, "host-b:2")
    thread, entered = enter_in_thread(store, second, "host-b:2")
    assert entered.wait(15)  # the dead process's claims went back to pending meanwhile
    thread.join(10)
    with store.connect() as conn:
        statuses = dict(conn.execute(text(
            "SELECT chunk_id, status FROM extraction_status")).all())
    assert {statuses[c.id] for c in first} == {"pending"}
    # another host's claim older than stale_after_s holds nothing back either
    earlier = store.claim_chunks(2, "host-c:3")  # the chunks put back above
    later = store.claim_chunks(2, "host-d:4")
    assert first_of(earlier) < first_of(later)
    time.sleep(0.2)
    thread, entered = enter_in_thread(store, later, "host-d:4", stale_after_s=0.1)
    assert entered.wait(10)
    thread.join(10)
