-- alkstore SQLite migration 001: job queues (live jobs, dead letters).
CREATE TABLE IF NOT EXISTS __alkstore_job (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  payload BLOB NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  run_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  worker_id TEXT,
  claimed_at INTEGER,
  claim_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  visibility_timeout_s INTEGER NOT NULL,
  backoff_base_s INTEGER NOT NULL,
  dead_letter_retention_s INTEGER,
  unique_key TEXT,
  last_error TEXT
);
-- Claim order over pending rows only: a claim moves a row out of this index
-- and the scan starts at the first due row of the highest priority.
CREATE INDEX IF NOT EXISTS __alkstore_job_claim
  ON __alkstore_job (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS __alkstore_job_deadline
  ON __alkstore_job (queue, claim_expires_at) WHERE state = 'processing';
CREATE INDEX IF NOT EXISTS __alkstore_job_expiry
  ON __alkstore_job (expires_at) WHERE expires_at IS NOT NULL AND state = 'pending';
CREATE UNIQUE INDEX IF NOT EXISTS __alkstore_job_unique
  ON __alkstore_job (queue, unique_key) WHERE unique_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS __alkstore_dead (
  id INTEGER PRIMARY KEY,
  queue TEXT NOT NULL,
  payload BLOB NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  run_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  worker_id TEXT,
  claimed_at INTEGER,
  claim_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  visibility_timeout_s INTEGER NOT NULL,
  backoff_base_s INTEGER NOT NULL,
  dead_letter_retention_s INTEGER,
  unique_key TEXT,
  last_error TEXT,
  reason TEXT NOT NULL,
  died_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_dead_retention ON __alkstore_dead (queue, died_at);
