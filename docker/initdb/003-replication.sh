#!/bin/sh
# Runs once, when the postgres container initialises an empty data volume: lets the optional
# read replica of docker-compose.yml (profile "replica", docs/STORAGE.md) stream from this
# server (pg_basebackup and the WAL sender need a `replication` line in pg_hba.conf; the
# image's own lines cover the `all` databases only). Takes effect when the entrypoint
# restarts the server after initialisation. A pgdata volume created before this script
# existed: run it once by hand and reload,
#   docker compose exec postgres sh /docker-entrypoint-initdb.d/003-replication.sh
#   docker compose exec postgres psql -U krag -d krag -c 'SELECT pg_reload_conf()'
set -eu
line="host replication all all scram-sha-256"
grep -qxF "$line" "$PGDATA/pg_hba.conf" || echo "$line" >> "$PGDATA/pg_hba.conf"
