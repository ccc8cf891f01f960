-- Runs once, when the postgres container initialises an empty data volume
-- (mounted at /docker-entrypoint-initdb.d). krag creates these extensions itself
-- on start-up as well; doing it here means the app role never needs the privilege.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
