-- alkstore SQLite migration 018: job tags and metadata, each JSON text
-- (an array of strings, an object) or NULL when the job has none, carried
-- with the row into the dead and done tables and back.
ALTER TABLE __alkstore_job ADD COLUMN tags TEXT;
ALTER TABLE __alkstore_job ADD COLUMN meta TEXT;
ALTER TABLE __alkstore_dead ADD COLUMN tags TEXT;
ALTER TABLE __alkstore_dead ADD COLUMN meta TEXT;
ALTER TABLE __alkstore_done ADD COLUMN tags TEXT;
ALTER TABLE __alkstore_done ADD COLUMN meta TEXT;
