-- alkstore SQLite migration 003: event streams. The offset is the rowid:
-- AUTOINCREMENT never hands out an id again, even after the highest events
-- are trimmed, and one writer at a time means ids are assigned in commit
-- order, so a reader can never skip an event.
CREATE TABLE IF NOT EXISTS __alkstore_event (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  stream TEXT NOT NULL,
  key TEXT,
  payload BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_event_stream_idx ON __alkstore_event (stream, id);
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
