-- alkstore PostgreSQL migration 015: consumer-group lease history. Each
-- bucket remembers its last holder and how its lease was given up
-- (released_how: rebalance or leave); every claim records a handoff with
-- its cause (first, rebalance, leave, lapse), kept a week, and counts it
-- by cause for good. Times are unix ms by the database's clock.
ALTER TABLE @group_bucket@ ADD COLUMN IF NOT EXISTS last_owner TEXT;
ALTER TABLE @group_bucket@ ADD COLUMN IF NOT EXISTS released_how TEXT;
CREATE TABLE IF NOT EXISTS @group_handoff@ (
  id BIGSERIAL PRIMARY KEY,
  group_name TEXT NOT NULL,
  bucket INT NOT NULL,
  epoch BIGINT NOT NULL,
  from_worker TEXT,
  to_worker TEXT NOT NULL,
  cause TEXT NOT NULL,
  at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS @index:group_handoff_idx@ ON @group_handoff@ (group_name, at);
CREATE TABLE IF NOT EXISTS @group_handoff_total@ (
  group_name TEXT NOT NULL,
  cause TEXT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (group_name, cause)
);
