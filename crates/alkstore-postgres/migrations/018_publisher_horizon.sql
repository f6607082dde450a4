-- alkstore PostgreSQL migration 018: readers hold back only for publishers.
--
-- Before: a reader stopped at (snapshot xmin << 16), the oldest open
-- transaction with an id anywhere on the server, so one write transaction
-- in any database (a bulk import, a migration, an idle-in-transaction
-- session of another app) stalled every stream for as long as it stayed
-- open. Now a transaction that publishes first registers, by holding a lock
-- on the event table stronger than a read's, and only then takes its
-- offset base; a reader holds back only for open transactions it cannot
-- see running unregistered.
--
-- A transaction that had an id before it registered (it wrote something,
-- then published) may be older than what readers have already passed, so
-- its base is a new transaction id drawn after it registered: a
-- subtransaction's, which no other transaction can own. It shows that base
-- to readers in a shared advisory lock (key `ADVISORY_NS`, the base's low
-- 32 bits). One that registered before it had an id (an autocommit
-- publish, or a transaction that publishes first) keeps its own id as its
-- base, as before.
--
-- Why it is gap-safe. A reader scans the locks (L) and reads its events in
-- a snapshot S. It passes a transaction of S only if L saw it running and
-- unregistered; it stops below the base of every registered one, below the
-- id of any other (one not seen at L), and below `n`, a bound under every
-- id given out after L. A transaction passed at L that publishes later
-- draws its base after L, at or above `n`. The page reads and the commit
-- bounds take L before S (a VOLATILE function's statements take fresh
-- snapshots under READ COMMITTED), so a transaction that ends between the
-- two is simply visible; statements that use the horizon inside their own
-- snapshot take L after S and also stop at what ended in between (a
-- transaction of S not seen at L), which is safe and, there, harmless.

-- Where a publisher that already had an id draws a fresh one: an insert in
-- a subtransaction that then rolls back (the row is dead at once and
-- pruned whatever the xmin horizon; the row itself is never logged).
CREATE UNLOGGED TABLE IF NOT EXISTS @publish_base@ (drawn INT);

-- The open transactions seen running now and where a reader stops for
-- each (see the top): `xs` their ids' low 32 bits, `holds` NULL to pass
-- one (it holds no lock on the event table but reads'), -1 to stop at its
-- id, else the low 32 bits of the base it showed; every id given out
-- after the scan is at least `n`. All NULL when the caller's snapshot
-- rule alone loses nothing: no open transaction, or no event of stream
-- `p_stream` (NULL: any) visible at or above the oldest one. (A scan of
-- `pg_locks` costs about as much as a short read.)
CREATE OR REPLACE FUNCTION @schema@.publisher_scan(p_stream TEXT,
  OUT n BIGINT, OUT xs BIGINT[], OUT holds BIGINT[])
LANGUAGE plpgsql VOLATILE AS $alk$
DECLARE
  snap pg_snapshot := pg_current_snapshot();
  lo BIGINT := pg_snapshot_xmin(snap)::TEXT::BIGINT;
BEGIN
  n := pg_snapshot_xmax(snap)::TEXT::BIGINT;
  IF lo = n OR (p_stream IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM @event@ e WHERE e.stream = p_stream AND e.id >= lo << 16)) THEN
    n := NULL;
    RETURN;
  END IF;
  WITH l AS MATERIALIZED (
    SELECT locktype, transactionid, relation, classid, objid, objsubid, mode, granted,
      virtualtransaction, pid
    FROM pg_locks WHERE locktype IN ('transactionid', 'relation', 'advisory')),
  running AS (
    SELECT t.transactionid::TEXT::BIGINT AS x, t.virtualtransaction AS vtx FROM l t
    WHERE t.locktype = 'transactionid' AND t.mode = 'ExclusiveLock' AND t.granted
      AND t.pid IS NOT NULL)
  SELECT array_agg(r.x),
    array_agg(CASE
      WHEN NOT EXISTS (SELECT 1 FROM l w WHERE w.locktype = 'relation'
        AND w.relation = @event_literal@::regclass AND w.mode <> 'AccessShareLock'
        AND w.virtualtransaction = r.vtx) THEN NULL
      ELSE COALESCE((SELECT min(a.objid::TEXT::BIGINT) FROM l a WHERE a.locktype = 'advisory'
        AND a.objsubid = 2 AND a.classid::TEXT::BIGINT = @advisory_ns@
        AND a.virtualtransaction = r.vtx), -1)
    END)
  INTO xs, holds FROM running r;
  xs := COALESCE(xs, '{}');
  holds := COALESCE(holds, '{}');
END
$alk$;

-- The first offset an event still invisible to snapshot `snap` could
-- take, given a scan (NULLs: the snapshot's xmin, the rule before 018).
-- PL/pgSQL, whose plans are kept (a SQL function with a subquery is
-- planned at every call: +0.2 ms a read).
CREATE OR REPLACE FUNCTION @schema@.horizon_in(snap pg_snapshot, n BIGINT, xs BIGINT[], holds BIGINT[])
RETURNS BIGINT LANGUAGE plpgsql IMMUTABLE AS $alk$
BEGIN
  IF xs IS NULL THEN
    RETURN pg_snapshot_xmin(snap)::TEXT::BIGINT << 16;
  END IF;
  RETURN LEAST(n, pg_snapshot_xmax(snap)::TEXT::BIGINT, (
    SELECT min(CASE
      WHEN k.i IS NULL OR holds[k.i] = -1 THEN o.x
      WHEN holds[k.i] IS NULL THEN NULL
      -- a base drawn after the id: in its epoch, or the next if it wrapped
      ELSE o.x - o.x % 4294967296 + holds[k.i]
        + CASE WHEN holds[k.i] < o.x % 4294967296 THEN 4294967296 ELSE 0 END
    END)
    FROM (SELECT v::TEXT::BIGINT AS x FROM pg_snapshot_xip(snap) v) o
    CROSS JOIN LATERAL (SELECT array_position(xs, o.x % 4294967296) AS i) k)) << 16;
END
$alk$;

-- The horizon of the calling statement's own snapshot, scanning after it:
-- for statements that filter by it (stats, lag, trims, paging back).
CREATE OR REPLACE FUNCTION @schema@.stream_horizon(p_stream TEXT) RETURNS BIGINT
LANGUAGE plpgsql STABLE AS $alk$
DECLARE
  s RECORD;
BEGIN
  SELECT * INTO s FROM @schema@.publisher_scan(p_stream);
  RETURN @schema@.horizon_in(pg_current_snapshot(), s.n, s.xs, s.holds);
END
$alk$;

-- The highest readable offset of stream `p_stream` (0: none), read in a
-- fresh snapshot after the scan: the bound an offset commit checks.
CREATE OR REPLACE FUNCTION @schema@.stream_head(p_stream TEXT) RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $alk$
DECLARE
  n BIGINT;
  xs BIGINT[];
  holds BIGINT[];
  h BIGINT;
  snap pg_snapshot := pg_current_snapshot();
  lo BIGINT := pg_snapshot_xmin(snap)::TEXT::BIGINT;
BEGIN
  IF lo <> pg_snapshot_xmax(snap)::TEXT::BIGINT AND EXISTS (
      SELECT 1 FROM @event@ e WHERE e.stream = p_stream AND e.id >= lo << 16) THEN
    SELECT * INTO n, xs, holds FROM @schema@.publisher_scan(NULL);
  END IF;
  SELECT max(e.id) INTO h FROM @event@ e WHERE e.stream = p_stream
    AND e.id < @schema@.horizon_in(pg_current_snapshot(), n, xs, holds);
  RETURN COALESCE(h, 0);
END
$alk$;

-- Publish: register (the event table's lock), then take the offset base.
-- The base is kept for the transaction's later publishes.
CREATE OR REPLACE FUNCTION @schema@.publish(streams TEXT[], keys TEXT[], payloads BYTEA[], at BIGINT, channel TEXT)
RETURNS BIGINT LANGUAGE plpgsql AS $alk$
DECLARE
  used BIGINT := COALESCE(NULLIF(current_setting('alkstore.published_in_xact', true), '')::BIGINT, 0);
  n BIGINT := cardinality(streams);
  base BIGINT := NULLIF(current_setting('alkstore.publish_base', true), '')::BIGINT;
  top BIGINT;
  drawn BIGINT;
BEGIN
  IF used + n > 65536 THEN
    RAISE EXCEPTION 'alkstore: more than 65536 events published in one transaction'
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  IF used = 0 OR base IS NULL THEN
    LOCK TABLE @event@ IN ROW EXCLUSIVE MODE;
    IF pg_current_xact_id_if_assigned() IS NULL THEN
      base := pg_current_xact_id()::TEXT::BIGINT;
    ELSE
      top := pg_current_xact_id()::TEXT::BIGINT;
      BEGIN
        INSERT INTO @publish_base@ DEFAULT VALUES RETURNING xmin::TEXT::BIGINT INTO drawn;
        RAISE EXCEPTION USING ERRCODE = 'AK018';
      EXCEPTION WHEN SQLSTATE 'AK018' THEN
        NULL;
      END;
      -- A 32-bit id drawn after `top`: in top's epoch, or the next one if
      -- the counter wrapped in between.
      base := (top - top % 4294967296) + drawn
        + CASE WHEN drawn < top % 4294967296 THEN 4294967296 ELSE 0 END;
      -- Show readers the base (until then they stop at this id).
      PERFORM pg_advisory_xact_lock_shared(@advisory_ns@::INT,
        (drawn - CASE WHEN drawn >= 2147483648 THEN 4294967296 ELSE 0 END)::INT);
    END IF;
    -- (base << 16) must stay a positive BIGINT (see migration 003).
    IF base >= (1::BIGINT << 47) THEN
      RAISE EXCEPTION 'alkstore: transaction id % is past the stream offset range', base
        USING ERRCODE = 'program_limit_exceeded';
    END IF;
    PERFORM set_config('alkstore.publish_base', base::TEXT, true);
  END IF;
  PERFORM set_config('alkstore.published_in_xact', (used + n)::TEXT, true);
  base := (base << 16) + used;
  INSERT INTO @event@ (stream, id, key, payload, created_at)
    SELECT e.stream, base + e.i - 1, e.key, e.payload,
           COALESCE(at, floor(extract(epoch FROM now()))::BIGINT)
    FROM unnest(streams, keys, payloads) WITH ORDINALITY AS e(stream, key, payload, i);
  IF channel <> '' THEN
    PERFORM pg_notify(channel, d.s) FROM (SELECT DISTINCT s FROM unnest(streams) AS u(s)) d;
  END IF;
  RETURN base;
END
$alk$;

-- The page reads of migration 004, below the horizon: the scan first, then
-- the page in a fresh snapshot (VOLATILE). The scan's first test is
-- written out here, so that a read it spares pays no nested call.
CREATE OR REPLACE FUNCTION @schema@.read_events(p_stream TEXT, p_after BIGINT, p_limit BIGINT)
RETURNS TABLE (id BIGINT, key TEXT, payload BYTEA, created_at BIGINT)
LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off AS $alk$
DECLARE
  n BIGINT;
  xs BIGINT[];
  holds BIGINT[];
  snap pg_snapshot := pg_current_snapshot();
  lo BIGINT := pg_snapshot_xmin(snap)::TEXT::BIGINT;
BEGIN
  IF lo <> pg_snapshot_xmax(snap)::TEXT::BIGINT AND EXISTS (
      SELECT 1 FROM @event@ e WHERE e.stream = p_stream AND e.id >= lo << 16) THEN
    SELECT * INTO n, xs, holds FROM @schema@.publisher_scan(NULL);
  END IF;
  RETURN QUERY SELECT e.id, e.key, e.payload, e.created_at FROM @event@ e
  WHERE e.stream = p_stream AND e.id > p_after
    AND e.id < @schema@.horizon_in(pg_current_snapshot(), n, xs, holds)
  ORDER BY e.id LIMIT p_limit;
END
$alk$;

CREATE OR REPLACE FUNCTION @schema@.read_group(p_group TEXT, p_buckets INT[], p_after BIGINT, p_limit BIGINT)
RETURNS TABLE (stream TEXT, id BIGINT, key TEXT, payload BYTEA, created_at BIGINT, bucket INT)
LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off AS $alk$
DECLARE
  n BIGINT;
  xs BIGINT[];
  holds BIGINT[];
  snap pg_snapshot := pg_current_snapshot();
  lo BIGINT := pg_snapshot_xmin(snap)::TEXT::BIGINT;
BEGIN
  IF lo <> pg_snapshot_xmax(snap)::TEXT::BIGINT AND EXISTS (
      SELECT 1 FROM @event@ e
      WHERE e.stream = (SELECT g.stream FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1)
        AND e.id >= lo << 16) THEN
    SELECT * INTO n, xs, holds FROM @schema@.publisher_scan(NULL);
  END IF;
  RETURN QUERY SELECT e.stream, e.id, e.key, e.payload, e.created_at,
    (CASE WHEN e.key IS NULL
      THEN e.id % (SELECT g.buckets::bigint FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1)
      ELSE ((hashtextextended(e.key, 0)
             % (SELECT g.buckets::bigint FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1))
            + (SELECT g.buckets::bigint FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1))
           % (SELECT g.buckets::bigint FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1)
      END)::int
  FROM @event@ e
  WHERE e.stream = (SELECT g.stream FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1)
    AND e.id > p_after
    AND e.id < @schema@.horizon_in(pg_current_snapshot(), n, xs, holds)
    AND (CASE WHEN e.key IS NULL
      THEN e.id % (SELECT g.buckets::bigint FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1)
      ELSE ((hashtextextended(e.key, 0)
             % (SELECT g.buckets::bigint FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1))
            + (SELECT g.buckets::bigint FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1))
           % (SELECT g.buckets::bigint FROM @group_bucket@ g WHERE g.group_name = p_group LIMIT 1)
      END)::int = ANY(p_buckets)
  ORDER BY e.id LIMIT p_limit;
END
$alk$;
