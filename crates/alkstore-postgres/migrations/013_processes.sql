-- alkstore PostgreSQL migration 013: the registry of running processes
-- (workers, subscribers, group members, schedulers), kept by their
-- heartbeats. Times are unix ms by the database's clock; ord is what an
-- operator asked: run, quiet or stop.
CREATE TABLE IF NOT EXISTS @process@ (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  host TEXT NOT NULL,
  pid BIGINT NOT NULL,
  version TEXT NOT NULL,
  roles TEXT[] NOT NULL,
  concurrency BIGINT NOT NULL,
  running BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  ord TEXT NOT NULL DEFAULT 'run'
);
