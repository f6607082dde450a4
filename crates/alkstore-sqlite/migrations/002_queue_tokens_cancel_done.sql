-- alkstore SQLite migration 002: claim tokens apart from attempts, cooperative
-- cancel, kept completed jobs, every attempt's error.
ALTER TABLE __alkstore_job ADD COLUMN claim_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE __alkstore_job ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE __alkstore_job ADD COLUMN keep_completed_s INTEGER;
ALTER TABLE __alkstore_job ADD COLUMN errors TEXT;
-- Version 1 proved claims by attempt; carry those tokens over.
UPDATE __alkstore_job SET claim_count = attempts;
ALTER TABLE __alkstore_dead ADD COLUMN claim_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE __alkstore_dead ADD COLUMN keep_completed_s INTEGER;
ALTER TABLE __alkstore_dead ADD COLUMN errors TEXT;
UPDATE __alkstore_dead SET claim_count = attempts;
CREATE TABLE IF NOT EXISTS __alkstore_done (
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
  claim_count INTEGER NOT NULL DEFAULT 0,
  keep_completed_s INTEGER,
  last_error TEXT,
  errors TEXT,
  completed_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_done_retention ON __alkstore_done (completed_at);
CREATE INDEX IF NOT EXISTS __alkstore_done_queue ON __alkstore_done (queue, id);
