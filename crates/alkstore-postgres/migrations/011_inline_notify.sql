-- alkstore PostgreSQL migration 011: the insert statements notify the
-- queues they inserted into themselves (each passes the schema's channel as
-- a parameter), so the job table's statement trigger goes: its transition
-- table and plpgsql call cost a one-job enqueue 29 µs of its 207 (14 %).
-- A process of an older version that still runs on this schema no longer
-- wakes other processes' workers when it enqueues (they find its jobs at
-- their next poll): stop older processes before upgrading.
DROP TRIGGER IF EXISTS job_notify_insert ON @job@;
DROP FUNCTION IF EXISTS @schema@.job_notify();
