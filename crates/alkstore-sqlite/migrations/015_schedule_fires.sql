-- alkstore SQLite migration 015: each schedule's last fires (boundaries
-- and manual runs) with their jobs, newest kept. Times are unix ms.
CREATE TABLE IF NOT EXISTS __alkstore_schedule_fire (
  name TEXT NOT NULL,
  boundary_ms INTEGER NOT NULL,
  queue TEXT NOT NULL,
  job_id INTEGER NOT NULL,
  fired_at INTEGER NOT NULL,
  manual INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS __alkstore_schedule_fire_name
  ON __alkstore_schedule_fire (name, fired_at);
