-- alkstore SQLite migration 017: queue depth samples, one per queue each
-- time the maintenance sweep runs, kept a week (unix seconds). Throughput
-- buckets past the hour fold into coarse 5-minute rows (shard -1).
CREATE TABLE IF NOT EXISTS __alkstore_queue_depth (
  queue TEXT NOT NULL,
  at INTEGER NOT NULL,
  ready INTEGER NOT NULL,
  scheduled INTEGER NOT NULL,
  processing INTEGER NOT NULL,
  dead INTEGER NOT NULL,
  PRIMARY KEY (queue, at)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS __alkstore_queue_depth_at ON __alkstore_queue_depth (at);
