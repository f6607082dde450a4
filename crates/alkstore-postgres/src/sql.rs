//! Statement texts, built once per engine with the quoted schema name.
//!
//! Every statement's `$1` is the injected clock's time or NULL; the `NOW`
//! fragment falls back to the database clock, so claims and expiries never
//! depend on a worker host's clock.

use crate::schema::{quote_identifier, tables, QualifiedTable};

/// Unix seconds: the injected time, else the database's. A scalar subquery,
/// so it is computed once per statement (an InitPlan), not once per row:
/// `extract` returns `numeric`, whose arithmetic is slow.
const NOW: &str = "(SELECT COALESCE($1::bigint, floor(extract(epoch FROM now()))::bigint))";

/// Columns read into `JobInfo` (then `state`, or `reason, died_at`).
pub(crate) const JOB_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, \
     worker_id, claim_expires_at, created_at, expires_at, unique_key, last_error";

/// Columns copied from a job row into the dead table.
const MOVE_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, worker_id, \
     claimed_at, claim_expires_at, created_at, expires_at, visibility_timeout_s, backoff_base_s, \
     dead_letter_retention_s, unique_key";

/// A valid claim: `$2` id, `$3` worker, `$4` attempt.
const HELD: &str = "id = $2 AND state = 'processing' AND worker_id = $3 AND attempts = $4 \
     AND claim_expires_at > (SELECT COALESCE($1::bigint, floor(extract(epoch FROM now()))::bigint))";

pub(crate) struct Sql {
    /// `"schema"."job_id_seq"`, passed as a `regclass` parameter.
    pub job_seq: String,
    pub enqueue_plain: String,
    pub enqueue_uniform: String,
    pub enqueue_unique: String,
    pub unique_holder: String,
    pub rescue: String,
    pub claim: String,
    pub ack: String,
    pub retry_select: String,
    pub retry_update: String,
    pub retry_bury: String,
    pub fail: String,
    pub heartbeat: String,
    pub release: String,
    pub cancel: String,
    pub get_live: String,
    pub get_dead: String,
    pub list_live: String,
    pub stats: String,
    pub queue_list: String,
    pub sweep_expired: String,
    pub sweep_exhausted: String,
    pub sweep_prune: String,
    pub dead_list: String,
    pub dead_requeue: String,
    pub dead_purge: String,
}

/// `INSERT INTO dead … SELECT … FROM gone`, for a `gone` CTE of deleted rows.
fn bury(dead: &QualifiedTable<'_>, error: &str, reason: &str) -> String {
    format!(
        "INSERT INTO {dead} ({MOVE_COLS}, last_error, reason, died_at) \
         SELECT {MOVE_COLS}, COALESCE({error}, last_error), '{reason}', {NOW} FROM gone"
    )
}

impl Sql {
    pub(crate) fn new(schema: &str) -> Sql {
        let job = QualifiedTable::new(schema, tables::JOB);
        let dead = QualifiedTable::new(schema, tables::DEAD);
        let unnest = "unnest($2::text[], $3::bytea[], $4::bigint[], $5::bigint[], $6::bigint[], \
              $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[]) \
              WITH ORDINALITY AS u(queue, payload, priority, run_at, delay_s, max_attempts, \
              expires_in, vis, backoff, retention, unique_key, ord)";
        let due = format!("COALESCE(run_at, {NOW} + delay_s)");
        let values = format!(
            "queue, payload, priority, {due}, max_attempts, {NOW}, \
             CASE WHEN expires_in IS NULL THEN NULL ELSE GREATEST({due}, {NOW}) + expires_in END, \
             vis, backoff, retention, unique_key"
        );
        let insert_cols =
            "queue, payload, priority, run_at, max_attempts, created_at, expires_at, \
             visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key";
        Sql {
            job_seq: format!("{}.{}", quote_identifier(schema), quote_identifier("job_id_seq")),
            // Without unique keys nothing can conflict: ids are assigned in
            // input order, so sorting the returned ids maps them back.
            enqueue_plain: format!(
                "INSERT INTO {job} ({insert_cols}) SELECT {values} FROM {unnest} ORDER BY ord RETURNING id"
            ),
            // A batch whose jobs differ only in payload (the common batch):
            // one array instead of eleven.
            enqueue_uniform: format!(
                "INSERT INTO {job} ({insert_cols}) \
                 SELECT $2::text, payload, $3::bigint, COALESCE($4::bigint, {NOW} + $5::bigint), $6::bigint, {NOW}, \
                   CASE WHEN $7::bigint IS NULL THEN NULL \
                     ELSE GREATEST(COALESCE($4::bigint, {NOW} + $5::bigint), {NOW}) + $7::bigint END, \
                   $8::bigint, $9::bigint, $10::bigint, NULL::text \
                 FROM unnest($11::bytea[]) WITH ORDINALITY AS u(payload, ord) ORDER BY ord RETURNING id"
            ),
            // With unique keys, ids are drawn first so each input row knows its
            // id; a skipped row reports the live job that holds its key (from
            // this batch or from before it).
            enqueue_unique: format!(
                "WITH input AS ( \
                   SELECT nextval($13::text::regclass) AS id, t.* FROM (SELECT * FROM {unnest} ORDER BY ord) t \
                 ), ins AS ( \
                   INSERT INTO {job} (id, {insert_cols}) SELECT id, {values} FROM input \
                   ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING \
                   RETURNING id, queue, unique_key \
                 ) \
                 SELECT i.ord, COALESCE(ins.id, first_ins.id, existing.id) AS id, ins.id IS NOT NULL AS inserted \
                 FROM input i \
                 LEFT JOIN ins ON ins.id = i.id \
                 LEFT JOIN LATERAL (SELECT x.id FROM ins x WHERE ins.id IS NULL AND x.queue = i.queue \
                   AND x.unique_key = i.unique_key LIMIT 1) first_ins ON true \
                 LEFT JOIN LATERAL (SELECT j.id FROM {job} j WHERE ins.id IS NULL AND j.queue = i.queue \
                   AND j.unique_key = i.unique_key LIMIT 1) existing ON true \
                 ORDER BY i.ord"
            ),
            // Ids go through `= ANY(ARRAY(subquery))` rather than a join: the
            // subquery runs once and each id is one primary-key probe. With a
            // join, the generic plan of a prepared statement (LIMIT unknown)
            // may merge-join along the whole primary key, dead rows included.
            unique_holder: format!("SELECT id FROM {job} WHERE queue = $1 AND unique_key = $2"),
            rescue: format!(
                "WITH expired AS ( \
                   SELECT ARRAY(SELECT id FROM {job} WHERE queue = $2 AND state = 'processing' \
                     AND claim_expires_at <= {NOW} FOR UPDATE SKIP LOCKED) AS ids \
                 ), gone AS ( \
                   DELETE FROM {job} j WHERE j.id = ANY((SELECT ids FROM expired)::bigint[]) \
                     AND j.attempts >= j.max_attempts RETURNING j.* \
                 ), buried AS ({bury}) \
                 UPDATE {job} j SET state = 'pending', claim_expires_at = NULL \
                 WHERE j.id = ANY((SELECT ids FROM expired)::bigint[]) AND j.attempts < j.max_attempts",
                bury = bury(&dead, "'claim expired on the last attempt'", "exhausted")
            ),
            claim: format!(
                "UPDATE {job} j SET state = 'processing', attempts = j.attempts + 1, worker_id = $3, \
                   claimed_at = {NOW}, claim_expires_at = {NOW} + j.visibility_timeout_s \
                 WHERE j.id = ANY(ARRAY( \
                   SELECT id FROM {job} WHERE queue = $2 AND state = 'pending' AND run_at <= {NOW} \
                     AND (expires_at IS NULL OR expires_at > {NOW}) \
                   ORDER BY priority DESC, run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)) \
                 RETURNING j.id, j.payload, j.priority, j.attempts, j.max_attempts, j.claim_expires_at, \
                   j.run_at, j.created_at, j.unique_key, j.claimed_at"
            ),
            // A join with `unnest` gets poor generic plans (it is estimated
            // at a handful of rows); matching each row to its claim by array
            // position keeps the plan a primary-key probe per id.
            ack: format!(
                "DELETE FROM {job} j \
                 WHERE j.id = ANY($2::bigint[]) AND j.state = 'processing' AND j.claim_expires_at > {NOW} \
                   AND j.worker_id = ($3::text[])[array_position($2::bigint[], j.id)] \
                   AND j.attempts = ($4::bigint[])[array_position($2::bigint[], j.id)] \
                 RETURNING j.id"
            ),
            retry_select: format!(
                "SELECT attempts, max_attempts, backoff_base_s, {NOW} FROM {job} WHERE {HELD} FOR UPDATE"
            ),
            retry_update: format!(
                "UPDATE {job} SET state = 'pending', run_at = $2, claim_expires_at = NULL, last_error = $3 \
                 WHERE id = $4 AND $1::bigint IS NOT DISTINCT FROM $1::bigint"
            ),
            retry_bury: format!(
                "WITH gone AS (DELETE FROM {job} WHERE id = $2 RETURNING *) {}",
                bury(&dead, "$3::text", "exhausted")
            ),
            fail: format!(
                "WITH gone AS (DELETE FROM {job} WHERE {HELD} RETURNING *) {} RETURNING id",
                bury(&dead, "$5::text", "failed")
            ),
            heartbeat: format!(
                "UPDATE {job} SET claim_expires_at = {NOW} + visibility_timeout_s WHERE {HELD} \
                 RETURNING claim_expires_at"
            ),
            // A released job is claimable at once: tell other processes.
            release: format!(
                "WITH r AS (UPDATE {job} SET state = 'pending', attempts = attempts - 1, claim_expires_at = NULL \
                 WHERE {HELD} RETURNING queue) \
                 SELECT pg_notify($5, queue) FROM r"
            ),
            cancel: format!("DELETE FROM {job} WHERE id = $1"),
            get_live: format!("SELECT {JOB_COLS}, state FROM {job} WHERE id = $1"),
            get_dead: format!("SELECT {JOB_COLS}, reason, died_at FROM {dead} WHERE id = $1"),
            list_live: format!(
                "SELECT {JOB_COLS}, state FROM {job} \
                 WHERE ($1::text IS NULL OR queue = $1) AND ($2::text IS NULL OR state = $2) AND id > $3 \
                 ORDER BY id LIMIT $4"
            ),
            stats: format!(
                "SELECT count(*) FILTER (WHERE state = 'pending' AND run_at <= {NOW}), \
                        count(*) FILTER (WHERE state = 'pending' AND run_at > {NOW}), \
                        count(*) FILTER (WHERE state = 'processing'), \
                        min(run_at) FILTER (WHERE state = 'pending' AND run_at <= {NOW}), \
                        (SELECT count(*) FROM {dead} WHERE queue = $2), \
                        {NOW} \
                 FROM {job} WHERE queue = $2"
            ),
            queue_list: format!(
                "SELECT queue FROM {job} UNION SELECT queue FROM {dead} ORDER BY 1"
            ),
            sweep_expired: format!(
                "WITH gone AS (DELETE FROM {job} WHERE state = 'pending' AND expires_at IS NOT NULL \
                   AND expires_at <= {NOW} RETURNING *) {}",
                bury(&dead, "NULL::text", "expired")
            ),
            sweep_exhausted: format!(
                "WITH gone AS (DELETE FROM {job} WHERE state = 'processing' AND claim_expires_at <= {NOW} \
                   AND attempts >= max_attempts RETURNING *) {}",
                bury(&dead, "'claim expired on the last attempt'", "exhausted")
            ),
            sweep_prune: format!(
                "DELETE FROM {dead} WHERE dead_letter_retention_s IS NOT NULL \
                 AND died_at + dead_letter_retention_s <= {NOW}"
            ),
            dead_list: format!(
                "SELECT {JOB_COLS}, reason, died_at FROM {dead} \
                 WHERE ($1::text IS NULL OR queue = $1) AND id > $2 ORDER BY id LIMIT $3"
            ),
            dead_requeue: format!(
                "WITH sel AS ( \
                   SELECT id FROM {dead} WHERE ($2::text IS NULL OR queue = $2) \
                     AND ($3::bigint[] IS NULL OR id = ANY($3)) FOR UPDATE SKIP LOCKED \
                 ), ins AS ( \
                   INSERT INTO {job} (id, queue, payload, priority, run_at, attempts, max_attempts, \
                     created_at, visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key, last_error) \
                   SELECT d.id, d.queue, d.payload, d.priority, {NOW}, 0, d.max_attempts, d.created_at, \
                     d.visibility_timeout_s, d.backoff_base_s, d.dead_letter_retention_s, d.unique_key, d.last_error \
                   FROM {dead} d JOIN sel USING (id) ORDER BY d.id \
                   ON CONFLICT DO NOTHING RETURNING id \
                 ) \
                 DELETE FROM {dead} d USING ins WHERE d.id = ins.id"
            ),
            dead_purge: format!(
                "DELETE FROM {dead} WHERE ($1::text IS NULL OR queue = $1) \
                 AND ($2::bigint[] IS NULL OR id = ANY($2))"
            ),
        }
    }
}
