#!/bin/sh
# Runs once, when the postgres container initialises an empty data volume, after
# 001-extensions.sql. The roles krag needs for row-level security (docs/STORAGE.md):
# krag_owner owns the tables and runs the migrations; krag_app is what the app and the
# LangGraph server connect as: neither owner nor superuser, so the policies bind it.
# The trigram, LIKE, array and full-text operators are marked LEAKPROOF (only a superuser
# may), so searches keep their GIN indexes under the policies (storage.roles.LEAKPROOF).
# A pgdata volume created before this script existed: run it once by hand,
#   docker compose exec postgres sh /docker-entrypoint-initdb.d/002-roles.sh
set -eu
psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
    -v owner_password="${KRAG_DB_OWNER_PASSWORD:-krag-owner}" \
    -v app_password="${KRAG_DB_APP_PASSWORD:-krag-app}" <<'SQL'
SELECT 'CREATE ROLE krag_owner LOGIN NOSUPERUSER NOBYPASSRLS'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'krag_owner') \gexec
SELECT 'CREATE ROLE krag_app LOGIN NOSUPERUSER NOBYPASSRLS'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'krag_app') \gexec
ALTER ROLE krag_owner PASSWORD :'owner_password';
ALTER ROLE krag_app PASSWORD :'app_password';
GRANT USAGE, CREATE ON SCHEMA public TO krag_owner;
GRANT USAGE ON SCHEMA public TO krag_app;
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
ALTER FUNCTION similarity_op(text, text) LEAKPROOF;
ALTER FUNCTION word_similarity_op(text, text) LEAKPROOF;
ALTER FUNCTION word_similarity_commutator_op(text, text) LEAKPROOF;
ALTER FUNCTION texticlike(text, text) LEAKPROOF;
ALTER FUNCTION textlike(text, text) LEAKPROOF;
ALTER FUNCTION arrayoverlap(anyarray, anyarray) LEAKPROOF;
ALTER FUNCTION arraycontains(anyarray, anyarray) LEAKPROOF;
ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF;
SQL
