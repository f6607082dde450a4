-- alkstore PostgreSQL migration 017: job tags (a JSON array of strings) and
-- metadata (a JSON object), NULL when the job has none, carried with the
-- row into the dead and done tables and back. No index: a filter by tag
-- reads the rows a listing reads anyway, and the job table's writes stay
-- as cheap as before. Placeholders as in 001.
ALTER TABLE @job@ ADD COLUMN IF NOT EXISTS tags JSONB, ADD COLUMN IF NOT EXISTS meta JSONB;
ALTER TABLE @dead@ ADD COLUMN IF NOT EXISTS tags JSONB, ADD COLUMN IF NOT EXISTS meta JSONB;
ALTER TABLE @done@ ADD COLUMN IF NOT EXISTS tags JSONB, ADD COLUMN IF NOT EXISTS meta JSONB;
