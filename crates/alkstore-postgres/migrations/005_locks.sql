-- alkstore PostgreSQL migration 005: named locks with fencing tokens. A
-- row is kept after release (owner NULL) so the next acquire's token
-- continues from the last one: tokens only grow per name. Times are unix
-- ms by the database's clock.
CREATE TABLE IF NOT EXISTS @lock@ (
  name TEXT PRIMARY KEY,
  owner TEXT,
  token BIGINT NOT NULL,
  acquired_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
