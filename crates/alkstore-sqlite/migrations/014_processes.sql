-- alkstore SQLite migration 014: the registry of running processes
-- (workers, subscribers, group members, schedulers), kept by their
-- heartbeats. Times are unix ms; roles is a JSON array of text; ord is
-- what an operator asked: run, quiet or stop.
CREATE TABLE IF NOT EXISTS __alkstore_process (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  version TEXT NOT NULL,
  roles TEXT NOT NULL,
  concurrency INTEGER NOT NULL,
  running INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  ord TEXT NOT NULL DEFAULT 'run'
) WITHOUT ROWID;
