-- alkstore SQLite migration 008: fixed-window rate limits. One row per
-- name: the current window's start (unix ms) and its admissions.
CREATE TABLE IF NOT EXISTS __alkstore_rate_limit (
  name TEXT PRIMARY KEY,
  window_start INTEGER NOT NULL,
  admitted INTEGER NOT NULL
) WITHOUT ROWID;
