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
-- The group's live workers: each renews its row every heartbeat, so a
-- worker that holds no bucket yet still counts when the others work out
-- their fair share (and release their surplus to it).
CREATE TABLE IF NOT EXISTS __alkstore_group_member (
  group_name TEXT NOT NULL,
  worker TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (group_name, worker)
) WITHOUT ROWID;
-- Events a group's handler gave up on (after its retries), with the error;
-- one row per (group, event). `requeued`: asked to run again; the bucket's
-- holder takes it (clearing the flag), runs it, and deletes it on success.
CREATE TABLE IF NOT EXISTS __alkstore_group_dead (
  group_name TEXT NOT NULL,
  id INTEGER NOT NULL,
  bucket INTEGER NOT NULL,
  stream TEXT NOT NULL,
  key TEXT,
  payload BLOB NOT NULL,
  error TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  failed_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  requeued INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (group_name, id)
) WITHOUT ROWID;
