-- alkstore SQLite migration 009: notifications, kept about a minute for
-- listeners to read after a wake (AUTOINCREMENT: ids never go back, even
-- once every row was pruned, so a listener's "after id" stays valid).
CREATE TABLE IF NOT EXISTS __alkstore_notify (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  channel TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_notify_channel ON __alkstore_notify (channel, id);
CREATE INDEX IF NOT EXISTS __alkstore_notify_created ON __alkstore_notify (created_at);
