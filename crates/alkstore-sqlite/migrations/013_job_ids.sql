-- alkstore SQLite migration 013: job ids without AUTOINCREMENT. AUTOINCREMENT
-- rewrote its `sqlite_sequence` row at the end of every insert statement: a
-- page written to the WAL on every commit that enqueues (a fifth of a
-- one-job enqueue's cost). Ids are now handed out by the engine from blocks
-- it reserves in `__alkstore_meta` ('job_id_high': the highest id handed out
-- or reserved), so they are still never reused: not after the newest job
-- is acked, nor after a crash (a restart reserves above the last block).
CREATE TABLE __alkstore_job_new (
  id INTEGER PRIMARY KEY,
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
  last_error TEXT,
  claim_count INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  keep_completed_s INTEGER,
  errors TEXT
);
INSERT INTO __alkstore_job_new (id, queue, state, payload, priority, run_at, attempts, max_attempts,
  worker_id, claimed_at, claim_expires_at, created_at, expires_at, visibility_timeout_s,
  backoff_base_s, dead_letter_retention_s, unique_key, last_error, claim_count, cancel_requested,
  keep_completed_s, errors)
SELECT id, queue, state, payload, priority, run_at, attempts, max_attempts,
  worker_id, claimed_at, claim_expires_at, created_at, expires_at, visibility_timeout_s,
  backoff_base_s, dead_letter_retention_s, unique_key, last_error, claim_count, cancel_requested,
  keep_completed_s, errors
FROM __alkstore_job;
-- The highest id ever given: AUTOINCREMENT's counter covers deleted jobs.
INSERT INTO __alkstore_meta (key, value)
SELECT 'job_id_high', max(
  COALESCE((SELECT seq FROM sqlite_sequence WHERE name = '__alkstore_job'), 0),
  COALESCE((SELECT max(id) FROM __alkstore_job), 0),
  COALESCE((SELECT max(id) FROM __alkstore_dead), 0),
  COALESCE((SELECT max(id) FROM __alkstore_done), 0))
WHERE true
ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value);
DROP TABLE __alkstore_job;
ALTER TABLE __alkstore_job_new RENAME TO __alkstore_job;
DELETE FROM sqlite_sequence WHERE name = '__alkstore_job';
CREATE INDEX __alkstore_job_claim
  ON __alkstore_job (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX __alkstore_job_deadline
  ON __alkstore_job (queue, claim_expires_at) WHERE state = 'processing';
CREATE INDEX __alkstore_job_expiry
  ON __alkstore_job (expires_at) WHERE expires_at IS NOT NULL AND state = 'pending';
CREATE UNIQUE INDEX __alkstore_job_unique
  ON __alkstore_job (queue, unique_key) WHERE unique_key IS NOT NULL;
