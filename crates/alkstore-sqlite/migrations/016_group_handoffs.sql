-- alkstore SQLite migration 016: consumer-group lease history. Each
-- bucket remembers its last holder and how its lease was given up
-- (released_how: rebalance or leave); every claim records a handoff with
-- its cause (first, rebalance, leave, lapse), kept a week, and counts it
-- by cause for good. Times are unix ms.
ALTER TABLE __alkstore_group_bucket ADD COLUMN last_owner TEXT;
ALTER TABLE __alkstore_group_bucket ADD COLUMN released_how TEXT;
CREATE TABLE IF NOT EXISTS __alkstore_group_handoff (
  group_name TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  from_worker TEXT,
  to_worker TEXT NOT NULL,
  cause TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_group_handoff_at ON __alkstore_group_handoff (group_name, at);
CREATE TABLE IF NOT EXISTS __alkstore_group_handoff_total (
  group_name TEXT NOT NULL,
  cause TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (group_name, cause)
) WITHOUT ROWID;
