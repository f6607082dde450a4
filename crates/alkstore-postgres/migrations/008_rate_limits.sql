-- alkstore PostgreSQL migration 008: fixed-window rate limits. One row per
-- name: the current window's start (unix ms by the database's clock) and
-- its admissions; the upsert's row lock serialises concurrent callers.
CREATE TABLE IF NOT EXISTS @rate_limit@ (
  name TEXT PRIMARY KEY,
  window_start BIGINT NOT NULL,
  admitted BIGINT NOT NULL
);
