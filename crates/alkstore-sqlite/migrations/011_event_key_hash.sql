-- alkstore SQLite migration 011: each keyed event's
-- hashtextextended(key, 0), stored at publish, so consumer groups place
-- events in buckets without calling the hash on every row they scan.
ALTER TABLE __alkstore_event ADD COLUMN key_hash INTEGER;
UPDATE __alkstore_event SET key_hash = hashtextextended(key, 0) WHERE key IS NOT NULL;
