-- alkstore SQLite migration 007: paused queues. A claim looks its queue up
-- here once per statement and takes nothing while it is listed.
CREATE TABLE IF NOT EXISTS __alkstore_queue_pause (
  queue TEXT PRIMARY KEY,
  paused_at INTEGER NOT NULL
) WITHOUT ROWID;
