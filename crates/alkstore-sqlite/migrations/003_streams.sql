-- alkstore SQLite migration 003: event streams. Events are clustered by
-- (stream, offset), so a replay reads one stream's events in one b-tree
-- range. Offsets come from the `event_seq` counter in __alkstore_meta,
-- bumped once per publish: one writer at a time means they are assigned in
-- commit order (a reader can never skip one), and the counter never goes
-- back, so an offset is never handed out again, even after a trim.
CREATE TABLE IF NOT EXISTS __alkstore_event (
  stream TEXT NOT NULL,
  id INTEGER NOT NULL,
  key TEXT,
  payload BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (stream, id)
) WITHOUT ROWID;
-- Consumer offsets: the last offset each consumer has handled.
CREATE TABLE IF NOT EXISTS __alkstore_stream_offset (
  stream TEXT NOT NULL,
  consumer TEXT NOT NULL,
  "offset" INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (stream, consumer)
) WITHOUT ROWID;
-- Per-stream settings and facts: how long maintenance keeps events, and the
-- highest offset a trim removed (so commits up to it stay valid).
CREATE TABLE IF NOT EXISTS __alkstore_stream (
  stream TEXT PRIMARY KEY,
  max_age_s INTEGER,
  trimmed_head INTEGER
) WITHOUT ROWID;
