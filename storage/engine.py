"""Engine construction: one pooled SQLAlchemy engine per store, psycopg 3 underneath."""

from __future__ import annotations

from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import ArgumentError, OperationalError

from storage import access
from storage.errors import DatabaseUnavailableError

# Per-connection settings: custom plans always (generic plans made p99 explode in the
# prototype), trigram threshold set once per connection rather than per statement.
_SESSION_OPTIONS = (
    "-c plan_cache_mode=force_custom_plan "
    "-c pg_trgm.similarity_threshold=0.1 "
    "-c pg_trgm.word_similarity_threshold=0.6 "
    "-c hnsw.ef_search=40 -c hnsw.iterative_scan=relaxed_order "
    # SSD / page-cache cost model: with the default 4.0 the planner seq-scans trigram
    # searches on tables of tens of thousands of rows instead of using the GIN indexes.
    "-c random_page_cost=1.1"
)


def sqlalchemy_url(url: str) -> str:
    """Normalise a libpq URL to the ``postgresql+psycopg://`` dialect."""
    scheme, _, rest = url.partition("://")
    if scheme in {"postgresql", "postgres"}:
        return f"postgresql+psycopg://{rest}"
    return url


def mask_password(url: str) -> str:
    """The URL with its password replaced by ``***`` (for messages and logs): SQLAlchemy's
    own rendering, which also reads ``http(s)://`` URLs. A string it cannot parse keeps
    only what follows its last ``@``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url if "@" not in url else "***@" + url.rsplit("@", 1)[1]


def make_engine(
    url: str, *, pool_size: int = 10, statement_timeout_ms: int | None = None,
    pre_ping: bool = True, read_only: bool = False, connect_timeout_s: int = 10,
) -> Engine:
    """A pooled engine; raises :class:`DatabaseUnavailableError` if the server is unreachable.
    ``read_only``: every transaction is read-only (a read replica's engine: even a replica
    promoted to primary never takes a write through it)."""
    options = _SESSION_OPTIONS
    if read_only:
        options += " -c default_transaction_read_only=on"
    if statement_timeout_ms:
        options += f" -c statement_timeout={int(statement_timeout_ms)}"
    engine = create_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=pre_ping,
        pool_timeout=30,
        connect_args={"options": options, "connect_timeout": connect_timeout_s},
    )
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        engine.dispose()
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise DatabaseUnavailableError(
            f"cannot connect to {mask_password(url)}: {reason}; check "
            + ("KRAG_DATABASE_READ_URL." if read_only else
               "KRAG_DATABASE_URL or unset it to use the embedded Postgres.")
        ) from None
    _type_unreachable(engine, url)
    event.listen(engine, "begin", _set_access)
    return engine


_SET_STATEMENT = "SELECT set_config('krag.read_scopes' / 'krag.write_scope' / ...)"


def _set_access(conn: Connection) -> None:
    """Every transaction starts with the request's access in its local settings (what the
    row-level security policies read, :mod:`storage.access`); none installed: none.

    A failure goes through SQLAlchemy's own handling of a statement's error (its
    ``_handle_dbapi_exception``: pinned SQLAlchemy, no public equivalent): a disconnect
    invalidates the pool's connections and is raised ``connection_invalidated``, so callers
    retry on a fresh one, and the ``handle_error`` hooks run."""
    import psycopg

    try:
        access.apply(conn.connection.dbapi_connection)
    except psycopg.Error as exc:
        conn._handle_dbapi_exception(exc, _SET_STATEMENT, None, None, None)  # raises


def _type_unreachable(engine: Engine, url: str) -> None:
    """Raise :class:`DatabaseUnavailableError` (one line) instead of SQLAlchemy's
    OperationalError when a *new* connection cannot be made (server stopped, restarting).

    Errors on an established connection keep their SQLAlchemy type: callers retry those
    (``connection_invalidated``) and the pool replaces the connection.
    """
    shown = mask_password(url)

    @event.listens_for(engine, "handle_error")
    def _unreachable(ctx: object) -> DatabaseUnavailableError | None:
        if getattr(ctx, "is_pre_ping", False) or getattr(ctx, "connection", None) is not None:
            return None  # a failed pre-ping is how the pool notices a dead connection
        orig = getattr(ctx, "original_exception", None)
        if not isinstance(getattr(ctx, "sqlalchemy_exception", None), OperationalError):
            return None
        lines = str(orig).strip().splitlines() if orig else []
        reason = lines[0] if lines else type(orig).__name__
        return DatabaseUnavailableError(
            f"cannot reach the database at {shown}: {reason}; the server may be stopped or "
            "restarting, retry once it is back (data already committed is kept).")
