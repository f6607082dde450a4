-- alkstore SQLite migration 010: job results, kept until expires_at (unix ms).
CREATE TABLE IF NOT EXISTS __alkstore_job_result (
  job_id INTEGER PRIMARY KEY,
  value BLOB NOT NULL,
  saved_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_job_result_expiry ON __alkstore_job_result (expires_at);
