-- alkstore SQLite migration 004: consumer groups. One row per (group,
-- bucket): who holds the bucket's lease and until when (unix ms by this
-- store's clock), the epoch that grows on every claim (a checkpoint is
-- saved only under the current epoch: fencing), and the bucket's
-- checkpoint (the last offset handled in it).
CREATE TABLE IF NOT EXISTS __alkstore_group_bucket (
  group_name TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  buckets INTEGER NOT NULL CHECK (buckets >= 1),
  stream TEXT NOT NULL,
  owner TEXT,
  lease_expires_at INTEGER,
  heartbeat_at INTEGER,
  epoch INTEGER NOT NULL DEFAULT 0,
  checkpoint INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (group_name, bucket),
  CHECK (bucket >= 0 AND bucket < buckets)
) WITHOUT ROWID;
-- A worker's held buckets (renew, release).
CREATE INDEX IF NOT EXISTS __alkstore_group_owner_idx
  ON __alkstore_group_bucket (group_name, owner);
