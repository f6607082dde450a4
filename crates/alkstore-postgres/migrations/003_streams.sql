-- alkstore PostgreSQL migration 003: event streams.
--
-- An event's id is its offset: (publishing transaction id << 16) + its
-- place among that transaction's events. Readers return only ids below
-- (the snapshot's xmin << 16): every transaction that could still add an
-- event there has ended, so a reader never moves past an event that a
-- slower transaction commits later (gap-safe), and publishers never wait
-- on each other. Unique in the store by construction; never reused.
CREATE TABLE IF NOT EXISTS @event@ (
  stream TEXT NOT NULL,
  id BIGINT NOT NULL,
  key TEXT,
  payload BYTEA NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (stream, id)
);

-- Consumer offsets: the last offset each consumer has handled.
CREATE TABLE IF NOT EXISTS @stream_offset@ (
  stream TEXT NOT NULL,
  consumer TEXT NOT NULL,
  "offset" BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (stream, consumer)
);

-- Per-stream settings and facts: how long maintenance keeps events, and
-- the highest offset a trim removed (so commits up to it stay valid).
CREATE TABLE IF NOT EXISTS @stream@ (
  stream TEXT PRIMARY KEY,
  max_age_s BIGINT,
  trimmed_head BIGINT
);

-- Append events in one round trip; returns the first offset (the events
-- take consecutive offsets from it, in the order given). The count of
-- events this transaction already published (a transaction-local setting)
-- carries across calls in one transaction.
CREATE OR REPLACE FUNCTION @schema@.publish(streams TEXT[], keys TEXT[], payloads BYTEA[], at BIGINT)
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
  -- (xid << 16) must stay a positive BIGINT: 2^47 transactions (~4,000
  -- years at a million a second) is the end of this scheme.
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
  RETURN base;
END
$alk$;

-- Wake-ups: every insert notifies the streams it touched, at commit, on a
-- channel of its own (queue hints stay on `alkstore_{schema}`).
CREATE OR REPLACE FUNCTION @schema@.event_notify() RETURNS trigger LANGUAGE plpgsql AS $alk$
BEGIN
  PERFORM pg_notify('alkstore_s_' || TG_TABLE_SCHEMA, d.s) FROM (SELECT DISTINCT stream AS s FROM new_rows) d;
  RETURN NULL;
END
$alk$;
CREATE OR REPLACE TRIGGER event_notify_insert AFTER INSERT ON @event@
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION @schema@.event_notify();
