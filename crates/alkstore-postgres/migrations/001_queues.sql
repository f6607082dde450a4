-- alkstore PostgreSQL migration 001: job queues (live jobs, dead letters,
-- wake-up NOTIFY trigger). Identifiers are written as @job@, @dead@,
-- @schema@ and @index:NAME@; the engine replaces them with quoted names
-- (schema-qualified tables, schema-prefixed index names) before running it.
CREATE TABLE IF NOT EXISTS @job@ (
  id BIGSERIAL PRIMARY KEY,
  queue TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  payload BYTEA NOT NULL,
  priority BIGINT NOT NULL DEFAULT 0,
  run_at BIGINT NOT NULL,
  attempts BIGINT NOT NULL DEFAULT 0,
  max_attempts BIGINT NOT NULL DEFAULT 3,
  worker_id TEXT,
  claimed_at BIGINT,
  claim_expires_at BIGINT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  visibility_timeout_s BIGINT NOT NULL DEFAULT 300,
  backoff_base_s BIGINT NOT NULL DEFAULT 5,
  dead_letter_retention_s BIGINT,
  unique_key TEXT,
  last_error TEXT
);
-- Pending rows only: a claim takes a row out of this index, so the scan
-- starts at the first due row whatever the backlog of claimed rows.
CREATE INDEX IF NOT EXISTS @index:job_claim_idx@ ON @job@ (queue, priority DESC, run_at, id)
  WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS @index:job_deadline_idx@ ON @job@ (queue, claim_expires_at)
  WHERE state = 'processing';
CREATE INDEX IF NOT EXISTS @index:job_expiry_idx@ ON @job@ (expires_at)
  WHERE expires_at IS NOT NULL AND state = 'pending';
CREATE UNIQUE INDEX IF NOT EXISTS @index:job_unique_idx@ ON @job@ (queue, unique_key)
  WHERE unique_key IS NOT NULL;
-- A queue table churns: every job is inserted, updated and deleted. Vacuum it
-- after 1 % of its rows are dead rather than PostgreSQL's default 20 %, so
-- dead entries at the head of the claim index do not pile up.
ALTER TABLE @job@ SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 1);

CREATE TABLE IF NOT EXISTS @dead@ (
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
  last_error TEXT,
  reason TEXT NOT NULL,
  died_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS @index:dead_retention_idx@ ON @dead@ (queue, died_at);

-- Wake-ups: every insert into the job table (ours, the caller's outbox
-- transaction, a requeue) notifies listeners of the queues it touched, at
-- commit. The channel is derived from the schema inside the function, so no
-- schema name is ever spliced into a string literal.
CREATE OR REPLACE FUNCTION @schema@.job_notify() RETURNS trigger LANGUAGE plpgsql AS $alk$
BEGIN
  PERFORM pg_notify('alkstore_' || TG_TABLE_SCHEMA, d.q) FROM (SELECT DISTINCT queue AS q FROM new_rows) d;
  RETURN NULL;
END
$alk$;
CREATE OR REPLACE TRIGGER job_notify_insert AFTER INSERT ON @job@
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION @schema@.job_notify();
