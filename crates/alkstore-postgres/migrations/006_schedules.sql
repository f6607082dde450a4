-- alkstore PostgreSQL migration 006: schedules. One row per schedule;
-- firing advances next_fire_at (unix ms by the database's clock; NULL
-- once the spec has no boundary left) and inserts the boundary's job in
-- one transaction, conditional on the next_fire_at it read.
CREATE TABLE IF NOT EXISTS @schedule@ (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  tz TEXT,
  queue TEXT NOT NULL,
  payload BYTEA NOT NULL,
  priority INT NOT NULL,
  max_catch_up INT NOT NULL,
  paused BOOLEAN NOT NULL DEFAULT false,
  next_fire_at BIGINT,
  last_boundary BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
-- Due schedules, soonest first.
CREATE INDEX IF NOT EXISTS @index:schedule_due_idx@ ON @schedule@ (next_fire_at) WHERE NOT paused;
