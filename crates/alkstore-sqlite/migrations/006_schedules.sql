-- alkstore SQLite migration 006: schedules. One row per schedule; firing
-- advances next_fire_at (unix ms; NULL once the spec has no boundary left)
-- and inserts the boundary's job in one transaction.
CREATE TABLE IF NOT EXISTS __alkstore_schedule (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  tz TEXT,
  queue TEXT NOT NULL,
  payload BLOB NOT NULL,
  priority INTEGER NOT NULL,
  max_catch_up INTEGER NOT NULL,
  paused INTEGER NOT NULL DEFAULT 0,
  next_fire_at INTEGER,
  last_boundary INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
-- Due schedules, soonest first.
CREATE INDEX IF NOT EXISTS __alkstore_schedule_due ON __alkstore_schedule (next_fire_at)
  WHERE paused = 0;
