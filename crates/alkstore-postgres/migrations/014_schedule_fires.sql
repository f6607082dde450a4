-- alkstore PostgreSQL migration 014: each schedule's last fires
-- (boundaries and manual runs) with their jobs, newest kept. Times are
-- unix ms by the database's clock.
CREATE TABLE IF NOT EXISTS @schedule_fire@ (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL,
  boundary_ms BIGINT NOT NULL,
  queue TEXT NOT NULL,
  job_id BIGINT NOT NULL,
  fired_at BIGINT NOT NULL,
  manual BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS @index:schedule_fire_idx@ ON @schedule_fire@ (name, fired_at);
