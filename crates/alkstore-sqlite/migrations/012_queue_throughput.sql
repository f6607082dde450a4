-- alkstore SQLite migration 012: jobs finished per queue, counted by every
-- ack, retry and failure in buckets of 10 s of the store's clock (unix
-- seconds); bucket 0 holds what the sweep folded from buckets past the
-- retention. `shard` is always 0 here (one writer); PostgreSQL spreads
-- concurrent writers over shards.
CREATE TABLE IF NOT EXISTS __alkstore_queue_throughput (
  bucket INTEGER NOT NULL,
  queue TEXT NOT NULL,
  shard INTEGER NOT NULL,
  completed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  PRIMARY KEY (bucket, queue, shard)
) WITHOUT ROWID;
