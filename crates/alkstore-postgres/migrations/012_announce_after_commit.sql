-- alkstore PostgreSQL migration 012: publish() takes the channel to notify
-- its streams on (empty: none), and the event table's statement trigger
-- goes. The engine's autocommit publishes pass none and announce after
-- their commit: a NOTIFY inside a transaction takes the server's
-- notification-queue lock at commit and holds it through the WAL flush, so
-- notifying commits cannot share a flush. Publishes inside a transaction
-- still notify at its commit.
CREATE OR REPLACE FUNCTION @schema@.publish(streams TEXT[], keys TEXT[], payloads BYTEA[], at BIGINT, channel TEXT)
RETURNS BIGINT LANGUAGE plpgsql AS $alk$
DECLARE
  used BIGINT := COALESCE(NULLIF(current_setting('alkstore.published_in_xact', true), '')::BIGINT, 0);
  n BIGINT := cardinality(streams);
  base BIGINT;
BEGIN
  IF used + n > 65536 THEN
    RAISE EXCEPTION 'alkstore: more than 65536 events published in one transaction'
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  base := pg_current_xact_id()::TEXT::BIGINT;
  -- (xid << 16) must stay a positive BIGINT (see migration 003).
  IF base >= (1::BIGINT << 47) THEN
    RAISE EXCEPTION 'alkstore: transaction id % is past the stream offset range', base
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  base := (base << 16) + used;
  PERFORM set_config('alkstore.published_in_xact', (used + n)::TEXT, true);
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

-- The four-argument form, for processes of the previous version still
-- running on this schema and for SQL that calls it: notifies at commit, as
-- the trigger did.
CREATE OR REPLACE FUNCTION @schema@.publish(streams TEXT[], keys TEXT[], payloads BYTEA[], at BIGINT)
RETURNS BIGINT LANGUAGE plpgsql AS $alk$
BEGIN
  RETURN @schema@.publish(streams, keys, payloads, at, 'alkstore_s_' || @schema_literal@);
END
$alk$;

DROP TRIGGER IF EXISTS event_notify_insert ON @event@;
DROP FUNCTION IF EXISTS @schema@.event_notify();
