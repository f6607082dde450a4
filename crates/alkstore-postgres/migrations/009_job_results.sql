-- alkstore PostgreSQL migration 009: job results, kept until expires_at
-- (unix ms by the database's clock).
CREATE TABLE IF NOT EXISTS @job_result@ (
  job_id BIGINT PRIMARY KEY,
  value BYTEA NOT NULL,
  saved_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS @index:job_result_expiry_idx@ ON @job_result@ (expires_at);
