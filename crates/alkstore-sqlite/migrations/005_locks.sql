-- alkstore SQLite migration 005: named locks with fencing tokens. A row is
-- kept after release (owner NULL) so the next acquire's token continues
-- from the last one: tokens only grow per name. Times are unix ms.
CREATE TABLE IF NOT EXISTS __alkstore_lock (
  name TEXT PRIMARY KEY,
  owner TEXT,
  token INTEGER NOT NULL,
  acquired_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
