"""The resources a retriever or tool opens from the settings, and their release.

:func:`open_handle` builds the request resources of :mod:`graph_flows.shared.resources` from
the settings (``KRAG_DATABASE_URL``, else the embedded PostgreSQL under ``KRAG_DATA_DIR``:
the same as the CLI, the UI and MCP) or borrows resources the caller opened (``resources=``:
never closed here). :meth:`Handle.close` closes the store it opened and releases this
process's handle on the embedded cluster when the integrations started it and no other open
retriever or tool still uses it (the count below; a cluster this process held before, such
as the process default's, is left to its owner).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from graph_flows.shared.resources import Resources, build_resources
from graph_flows.shared.settings import Settings, load_settings
from storage.embedded import cluster_dir, holds_embedded, stop_embedded

_lock = threading.Lock()
_users: dict[Path, int] = {}
"""Open integration handles per embedded cluster they started (process-wide, as the
embedded cluster's own handle is)."""


@dataclass
class Handle:
    """Resources for the integration's calls; ``owned``: opened here (closed by close)."""

    resources: Resources
    owned: bool
    cluster: Path | None = None
    closed: bool = False

    def close(self) -> None:
        """Close what :func:`open_handle` opened (idempotent)."""
        if self.closed or not self.owned:
            self.closed = True
            return
        self.closed = True
        self.resources.store.close()
        if self.cluster is not None:
            _release(self.cluster, self.resources.settings.data_dir)


def open_handle(settings: Settings | None, resources: Resources | None) -> Handle:
    """Borrow ``resources``, or open resources from ``settings`` (default: the environment)."""
    if resources is not None:
        return Handle(resources, owned=False)
    settings = settings or load_settings()
    cluster = None
    if not settings.database_url:
        with _lock:
            pgdata = cluster_dir(settings.data_dir)
            if pgdata in _users or not holds_embedded(settings.data_dir):
                _users[pgdata] = _users.get(pgdata, 0) + 1
                cluster = pgdata
    try:
        return Handle(build_resources(settings), owned=True, cluster=cluster)
    except BaseException:  # nothing opened: the count goes back (and the cluster's handle)
        if cluster is not None:
            _release(cluster, settings.data_dir)
        raise


def _release(cluster: Path, data_dir: Path) -> None:
    """One user of ``cluster`` fewer; the last one releases this process's handle."""
    with _lock:
        left = _users.get(cluster, 1) - 1
        if left > 0:
            _users[cluster] = left
            return
        _users.pop(cluster, None)
    stop_embedded(data_dir)
