"""KnowledgeStore: the one interface the graphs, CLI and UI use to reach PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.exc import DBAPIError

from storage import (
    access,
    claims,
    documents,
    graph_writes,
    merge,
    meta,
    migrate,
    planner_stats,
    replicas,
    resolution,
    roles,
    scopes,
    stats,
    turns,
    vectors,
    work,
)
from storage.engine import make_engine
from storage.errors import NotFoundError
from storage.models import (
    ChunkOutcome,
    ChunkWork,
    DocumentIn,
    DocumentSync,
    Entity,
    EntityIn,
    RelationIn,
    RemovalReport,
)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What `krag doctor` reports about the database."""

    version: str
    extensions: dict[str, str]
    schema_revision: str | None
    embedding_model: str | None
    embedding_dim: int | None


class KnowledgeStore:
    """Documents, chunks, extraction status, entities and relations in PostgreSQL.

    Build with :meth:`open` (connects, migrates, checks the embedding model). All writes are
    batched; each public write method is one transaction unless a connection from
    :meth:`transaction` is passed in.
    """

    def __init__(self, engine: Engine, embedding_model: str, embedding_dim: int,
                 owner_engine: Engine | None = None,
                 read_replicas: replicas.ReplicaSet | None = None) -> None:
        self.engine = engine
        self.owner_engine = owner_engine or engine
        self.embedding_model = embedding_model
        self.embedding_dim = embedding_dim
        self.replicas = read_replicas
        self._search_engines: dict[int, Engine] = {}
        # a commit on the primary: the session of its context reads its own writes
        event.listen(engine, "commit", replicas.note_commit)

    # -- lifecycle -------------------------------------------------------------------------
    @classmethod
    def open(
        cls, url: str, *, embedding_model: str, embedding_dim: int, pool_size: int = 10,
        statement_timeout_ms: int | None = None, check_embedding: bool = True,
        owner_url: str | None = None, read_urls: Sequence[str] = (),
        replica_max_lag_s: float = 10.0,
    ) -> KnowledgeStore:
        """Connect, create/upgrade the schema and verify the embedding model matches.

        ``url``: the application's role (subject to row-level security); ``owner_url``: the
        tables' owner, which runs the migrations, grants the application's role its
        privileges and runs the maintenance statements (default: ``url`` itself).
        ``check_embedding=False`` opens a store whose vectors come from another model (only
        to re-embed it). ``read_urls``: streaming replicas that serve read-only requests
        (:mod:`storage.replicas`), skipped when they lag more than ``replica_max_lag_s``.
        """
        engine = make_engine(url, pool_size=pool_size, statement_timeout_ms=statement_timeout_ms)
        owner = None
        try:
            if owner_url and owner_url != url:
                owner = make_engine(owner_url, pool_size=2)
            with access.use_access(access.WHOLE_STORE):
                _prepare_schema(owner or engine, engine, embedding_model, embedding_dim,
                                check_embedding)
        except Exception:
            engine.dispose()
            if owner is not None:
                owner.dispose()
            raise
        read = replicas.ReplicaSet(read_urls, engine, max_lag_s=replica_max_lag_s,
                                   pool_size=pool_size) if read_urls else None
        return cls(engine, embedding_model, embedding_dim, owner, read)

    def close(self) -> None:
        if self.replicas is not None:
            self.replicas.close()
        for engine in self._search_engines.values():
            engine.dispose()
        self.engine.dispose()
        if self.owner_engine is not self.engine:
            self.owner_engine.dispose()

    def read_engine(self) -> Engine:
        """The engine of this request's reads: a read replica's when the request is
        read-only (:func:`storage.replicas.read_only`) and one is fit to serve it, else the
        primary's."""
        replica = replicas.pinned(self.replicas, id(self))
        return self.engine if replica is None else replica.connect_engine()

    def read_replica(self) -> str | None:
        """The replica (URL, password hidden) serving this request's reads, or None when
        the primary serves them (:meth:`read_engine`)."""
        replica = replicas.pinned(self.replicas, id(self))
        return None if replica is None else replica.shown

    def replica_report(self, *, quiet: bool = False) -> list[dict[str, object]]:
        """Each read replica's state, probed now, a warning line for each that cannot serve
        unless ``quiet`` (``krag doctor`` shows them itself); [] without replicas."""
        return self.replicas.report(quiet=quiet) if self.replicas is not None else []

    def search_engine(self, timeout_ms: int) -> Engine:
        """A second pool for read-only searches: ``statement_timeout`` set on each connection
        (no extra round trip per query) and no pre-ping (callers retry a dead connection);
        a read replica's in a read-only request (:meth:`read_engine`)."""
        replica = replicas.pinned(self.replicas, id(self))
        if replica is not None:
            return replica.search_engine(timeout_ms)
        engine = self._search_engines.get(timeout_ms)
        if engine is None:
            engine = make_engine(
                self.engine.url.render_as_string(hide_password=False),
                pool_size=self.engine.pool.size(), statement_timeout_ms=timeout_ms,
                pre_ping=False)
            self._search_engines[timeout_ms] = engine
        return engine

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Connection]:
        """A connection inside one transaction (committed on success, rolled back on error).

        ``durable=False``: the commit returns before its WAL reaches the disk
        (``synchronous_commit = off`` for this transaction only). A crash of the server (not
        of this process) can then lose the last such commits, whole and in order, never
        leave part of one; for writes that are redone when lost (an ingest's: a chunk whose
        write is lost is pending or claimed again), followed by :meth:`flush_commits` before
        the caller reports them done. On the test VM a synchronous commit costs ~8 ms of wall
        (an fsync), an asynchronous one ~1 ms (HISTORY: ingest_17.md)."""
        with self.engine.begin() as conn:
            if not durable:
                conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
            yield conn

    def flush_commits(self) -> None:
        """Wait until every commit so far (``durable=False`` ones of any session too) is on
        disk: one synchronous commit that wrote WAL, which flushes the WAL up to its own
        record. The WAL it writes is an empty transactional logical message (no row, no lock
        another worker could wait on); a transaction that only took an id commits without
        the flush, as one that wrote nothing does."""
        with self.engine.begin() as conn:
            conn.execute(text("SELECT pg_logical_emit_message(true, 'krag.flush', '')"))

    @contextmanager
    def connect(self, *, autocommit: bool = False) -> Iterator[Connection]:
        """A pooled connection for reads (nothing is committed for the caller; a read
        replica's in a read-only request, :meth:`read_engine`); ``autocommit=True`` for
        maintenance statements (ANALYZE, index builds), made as the tables' owner."""
        with (self.owner_engine if autocommit else self.read_engine()).connect() as conn:
            if autocommit:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            yield conn

    # -- documents -------------------------------------------------------------------------
    def sync_document(self, doc: DocumentIn, chunk_texts: Sequence[str], *,
                      durable: bool = True) -> DocumentSync:
        """Store a document version; see :func:`storage.documents.sync_document`
        (``durable``: see :meth:`transaction`)."""
        return self.sync_documents([(doc, chunk_texts)], durable=durable)[0]

    def sync_documents(self, items: Sequence[tuple[DocumentIn, Sequence[str]]], *,
                       durable: bool = True) -> list[DocumentSync]:
        """Store document versions in one transaction; see
        :func:`storage.documents.sync_documents` (``durable``: see :meth:`transaction`)."""
        with self.transaction(durable=durable) as conn:
            return documents.sync_documents(conn, items)

    def remove_source(self, scope: str, source: str) -> RemovalReport:
        """Remove every document of a source and whatever only they supported."""
        with self.transaction() as conn:
            doc_ids = list(conn.execute(
                text("SELECT id FROM documents WHERE scope = :s AND source = :src FOR UPDATE"),
                {"s": scope, "src": source}).scalars())
            if not doc_ids:
                raise NotFoundError(
                    f"no source {source!r} in scope {scope!r}; `krag status` lists sources.")
            return documents.remove_documents(conn, doc_ids)

    def remove_document(self, document_id: str) -> RemovalReport:
        with self.transaction() as conn:
            return documents.remove_documents(conn, [document_id])

    # -- extraction work -------------------------------------------------------------------
    def claim_chunks(self, limit: int, worker: str, **filters: Any) -> list[ChunkWork]:
        """Claim pending chunks for extraction (safe across processes and machines)."""
        with self.transaction() as conn:
            return work.claim_chunks(conn, limit=limit, worker=worker, **filters)

    def fail_chunk(self, chunk_id: str, error: str, llm_calls: int = 0) -> None:
        with self.transaction() as conn:
            work.fail_chunk(conn, chunk_id, error, llm_calls)

    def release_chunks(self, chunk_ids: Sequence[str]) -> None:
        with self.transaction() as conn:
            work.release_chunks(conn, chunk_ids)

    # -- graph writes ----------------------------------------------------------------------
    def write_graph(
        self, entities: Sequence[EntityIn], relations: Sequence[RelationIn],
        completed: Sequence[ChunkOutcome] = (), *, durable: bool = True,
    ) -> None:
        """Upsert entities, then relations, then mark chunks completed: one transaction
        (``durable``: see :meth:`transaction`)."""
        with self.transaction(durable=durable) as conn:
            graph_writes.upsert_entities(conn, entities)
            graph_writes.upsert_relations(conn, relations)
            work.complete_chunks(conn, completed)
            merge.unmark_joined(conn, [c.chunk_id for c in completed])

    def analyze_new_tables(self) -> list[str]:
        """ANALYZE the graph tables that have rows and no statistics yet, as their owner
        (:mod:`storage.planner_stats`); returns those analyzed (none once every table has
        statistics: one catalog read)."""
        with self.engine.connect() as conn:
            tables = planner_stats.never_analyzed(conn)
        if tables:
            with self.connect(autocommit=True) as conn:
                planner_stats.analyze(conn, tables)
        return tables

    # -- reads -----------------------------------------------------------------------------
    def similar_name_pairs(
        self, names: Sequence[tuple[str, str]], threshold: float
    ) -> set[tuple[str, str]]:
        """(group, name) tuples -> name pairs of one group with pg_trgm similarity >= threshold."""
        return resolution.similar_name_pairs(self.engine, names, threshold)

    def name_similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """pg_trgm ``similarity(a, b)`` of each (a, b) pair, in order."""
        return resolution.name_similarities(self.engine, pairs)

    def get_entities(self, entity_ids: Sequence[str]) -> list[Entity]:
        with self.read_engine().connect() as conn:
            rows = conn.execute(text(
                "SELECT id, name, type, summary, confidence, scope, aliases FROM entities "
                "WHERE id = ANY(:ids)"), {"ids": list(entity_ids)}).all()
        return [Entity(r.id, r.name, r.type, r.summary, r.confidence, r.scope,
                       tuple(r.aliases or ())) for r in rows]

    def counts(self, scope: str | None = None) -> dict[str, int]:
        """Row counts per table (optionally for one scope)."""
        sql = """
        SELECT
          (SELECT count(*) FROM documents d WHERE CAST(:s AS text) IS NULL OR d.scope = :s),
          (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id
             WHERE CAST(:s AS text) IS NULL OR d.scope = :s),
          (SELECT count(*) FROM entities e WHERE CAST(:s AS text) IS NULL OR e.scope = :s),
          (SELECT count(*) FROM relations r WHERE CAST(:s AS text) IS NULL OR r.scope = :s)"""
        with self.read_engine().connect() as conn:
            d, c, e, r = conn.execute(text(sql), {"s": scope}).one()
        return {"documents": d, "chunks": c, "entities": e, "relations": r}

    def rls_bypass(self) -> str | None:
        """Why the application's connections are not bound by the row-level security
        policies (superuser, BYPASSRLS, table owner), or None (:mod:`storage.roles`)."""
        return roles.bypass_reason(self.engine)

    def server_info(self) -> ServerInfo:
        with self.engine.connect() as conn:
            version = conn.execute(text("SHOW server_version")).scalar() or "?"
            exts = dict(conn.execute(text(
                "SELECT extname, extversion FROM pg_extension "
                "WHERE extname IN ('vector', 'pg_trgm')")).all())
            stored = meta.read_meta(conn)
        return ServerInfo(
            version, exts, migrate.current_revision(self.engine),
            stored.get("embedding_model"),
            int(stored["embedding_dim"]) if "embedding_dim" in stored else None,
        )

    # -- reads for the services (status, progress, scopes, claims) --------------------------
    def source_stats(self, scope: str | None = None, sources: Sequence[str] | None = None
                     ) -> list[stats.SourceStats]:
        """Per (scope, source) statistics; see :func:`storage.stats.source_stats`."""
        return stats.source_stats(self.read_engine(), scope, sources)

    def graph_names(self, scope: str) -> tuple[list[str], list[str]]:
        """(entity names, stated relation texts) of a scope; :func:`storage.stats.graph_names`."""
        return stats.graph_names(self.read_engine(), scope)

    def embedding_info(self) -> tuple[str | None, int | None]:
        """(model, dimension) of the stored vectors."""
        return stats.embedding_info(self.read_engine())

    def failed_chunks(self, scope: str | None = None, source: str | None = None,
                      limit: int = 20) -> list[tuple[str, str, str]]:
        """(uri, chunk id, error) of failed chunks, most recent first."""
        return stats.failed_chunks(self.read_engine(), scope, source, limit)

    def access_for(self, scope: str) -> access.Access:
        """The access of a request in ``scope``: read it and its ancestors, write it
        (install with :func:`storage.access.use_access`). A bad name is a one-line
        :class:`~storage.errors.InvalidInputError`."""
        scopes.check_name(scope)
        for attempt in range(3):  # a pooled connection that died: retried on a fresh one
            try:
                with self.read_engine().connect() as conn:
                    chain = scopes.scope_chain(conn, scope)
                break
            except DBAPIError as exc:
                if attempt == 2 or not exc.connection_invalidated:
                    raise
        return access.for_scopes(chain, scope)

    def held_scopes(self) -> list[str]:
        """Scopes that hold entities (see :func:`storage.scopes.held_scopes`)."""
        with self.read_engine().connect() as conn:
            return scopes.held_scopes(conn)

    @contextmanager
    def store_turn(self, **batch: Any) -> Iterator[turns.Turn]:
        """Hold the scope's store turn for a batch (:func:`storage.turns.store_turn`)."""
        with turns.store_turn(self.engine, **batch) as turn:
            yield turn

    def release_worker_claims(self, worker: str) -> int:
        """Put chunks still claimed by ``worker`` back to pending; returns how many."""
        return claims.release_worker_claims(self.engine, worker)

    def drop_vector_indexes(self) -> None:
        """Drop the HNSW indexes before a large load (:func:`storage.vectors`), as owner."""
        with self.owner_engine.begin() as conn:
            vectors.drop_vector_indexes(conn)

    def create_vector_indexes(self) -> None:
        """(Re)create missing HNSW indexes (as the tables' owner)."""
        with self.owner_engine.begin() as conn:
            vectors.create_vector_indexes(conn)

    # -- embeddings ------------------------------------------------------------------------
    def reset_embeddings(self, embedding_model: str, embedding_dim: int) -> None:
        """Switch the store to another embedding model: clear vectors, resize columns.

        Callers then re-embed every entity, relation and chunk (``krag reembed``).
        """
        with access.use_access(access.WHOLE_STORE), self.owner_engine.begin() as conn:
            for table in vectors.TABLES:
                name, create = vectors.vector_index(table, embedding_dim)
                conn.execute(text(f"DROP INDEX IF EXISTS {name}"))
                conn.execute(text(
                    f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({embedding_dim}) "
                    "USING NULL"))
                conn.execute(text(create))
            meta.write_meta(conn, embedding_model, embedding_dim)
        self.embedding_model, self.embedding_dim = embedding_model, embedding_dim


def _prepare_schema(owner: Engine, app: Engine, embedding_model: str, embedding_dim: int,
                    check_embedding: bool) -> None:
    """Migrate as the owner, grant the application's role (when another) its privileges,
    record or check the embedding model."""
    meta.check_extensions_available(owner)
    migrate.upgrade(owner, embedding_dim)
    if owner is not app:
        app_role = roles.current_role(app)
        if app_role != roles.current_role(owner):
            with owner.begin() as conn:
                roles.grant_app(conn, app_role)
    if check_embedding:
        meta.check_or_record_embedding(owner, embedding_model, embedding_dim)
