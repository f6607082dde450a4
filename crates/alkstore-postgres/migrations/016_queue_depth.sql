-- alkstore PostgreSQL migration 016: queue depth samples, one per queue
-- each time the maintenance sweep runs, kept a week (unix seconds by the
-- database's clock). Throughput buckets past the hour fold into coarse
-- 5-minute rows (shard -1).
CREATE TABLE IF NOT EXISTS @queue_depth@ (
  queue TEXT NOT NULL,
  at BIGINT NOT NULL,
  ready BIGINT NOT NULL,
  scheduled BIGINT NOT NULL,
  processing BIGINT NOT NULL,
  dead BIGINT NOT NULL,
  PRIMARY KEY (queue, at)
);
CREATE INDEX IF NOT EXISTS @index:queue_depth_at_idx@ ON @queue_depth@ (at);
