-- alkstore PostgreSQL migration 010: jobs finished per queue, counted by
-- every ack, retry and failure in buckets of 10 s of the database's clock
-- (unix seconds); bucket 0 holds what the sweep folded from buckets past
-- the retention. Concurrent ackers would queue on one row per bucket, so
-- each connection counts in its own shard (its backend pid modulo 16);
-- readers sum the shards. Counts are not indexed, so their updates are HOT
-- (the fill factor leaves room on the page for them).
CREATE TABLE IF NOT EXISTS @queue_throughput@ (
  bucket BIGINT NOT NULL,
  queue TEXT NOT NULL,
  shard SMALLINT NOT NULL,
  completed BIGINT NOT NULL,
  failed BIGINT NOT NULL,
  PRIMARY KEY (bucket, queue, shard)
) WITH (fillfactor = 70);
