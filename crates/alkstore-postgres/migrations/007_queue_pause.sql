-- alkstore PostgreSQL migration 007: paused queues. A claim looks its
-- queue up here once per statement (an uncorrelated subquery: one probe)
-- and takes nothing while it is listed.
CREATE TABLE IF NOT EXISTS @queue_pause@ (
  queue TEXT PRIMARY KEY,
  paused_at BIGINT NOT NULL
);
