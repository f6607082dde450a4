-- alkstore PostgreSQL migration 002: claim tokens apart from attempts,
-- cooperative cancel, kept completed jobs, every attempt's error.
-- Idempotent (IF NOT EXISTS), placeholders as in 001.
ALTER TABLE @job@ ADD COLUMN IF NOT EXISTS claim_count BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS cancel_requested BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN IF NOT EXISTS keep_completed_s BIGINT,
  ADD COLUMN IF NOT EXISTS errors JSONB;
-- Version 1 proved claims by attempt; carry those tokens over.
UPDATE @job@ SET claim_count = attempts WHERE claim_count = 0 AND attempts > 0;
ALTER TABLE @dead@ ADD COLUMN IF NOT EXISTS claim_count BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS keep_completed_s BIGINT,
  ADD COLUMN IF NOT EXISTS errors JSONB;
UPDATE @dead@ SET claim_count = attempts WHERE claim_count = 0 AND attempts > 0;
CREATE TABLE IF NOT EXISTS @done@ (
  id BIGINT PRIMARY KEY,
  queue TEXT NOT NULL,
  payload BYTEA NOT NULL,
  priority BIGINT NOT NULL DEFAULT 0,
  run_at BIGINT NOT NULL DEFAULT 0,
  attempts BIGINT NOT NULL DEFAULT 0,
  max_attempts BIGINT NOT NULL DEFAULT 0,
  worker_id TEXT,
  claimed_at BIGINT,
  claim_expires_at BIGINT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  visibility_timeout_s BIGINT NOT NULL DEFAULT 300,
  backoff_base_s BIGINT NOT NULL DEFAULT 5,
  dead_letter_retention_s BIGINT,
  unique_key TEXT,
  claim_count BIGINT NOT NULL DEFAULT 0,
  keep_completed_s BIGINT,
  last_error TEXT,
  errors JSONB,
  completed_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS @index:done_retention_idx@ ON @done@ (completed_at);
CREATE INDEX IF NOT EXISTS @index:done_queue_idx@ ON @done@ (queue, id);
