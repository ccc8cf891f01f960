"""Alembic environment: online only, on the connection handed over by storage.migrate."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    version_table="krag_schema_version",
    transaction_per_migration=True,
)
with context.begin_transaction():
    context.run_migrations()
