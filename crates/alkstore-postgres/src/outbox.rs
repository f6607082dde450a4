//! Enqueue inside the caller's own PostgreSQL transaction.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use alkstore_core::{Enqueued, Error, Limits, NewJob, Result};
use tokio_postgres::GenericClient;

use crate::queues::sql::Sql;
use crate::queues::{enqueue_text, insert_jobs, is_keyed};
use crate::schema::validate_schema_name;

/// The statement texts of `schema`, built once per schema and process rather
/// than on every outbox enqueue.
fn statements_for(schema: &str) -> Arc<Sql> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Sql>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
    map.entry(schema.to_string())
        .or_insert_with(|| Arc::new(Sql::new(schema)))
        .clone()
}

/// Enqueue `job` through the caller's client or open transaction, so it
/// commits or rolls back with the caller's own writes (transactional outbox).
/// `schema` is the store's schema; the store must have been opened once to
/// create it. Times come from the database clock.
///
/// ```no_run
/// # async fn demo(client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use alkstore_core::NewJob;
/// let tx = client.transaction().await?;
/// tx.execute("INSERT INTO orders (id) VALUES (1)", &[]).await?;
/// alkstore_postgres::enqueue_in(&tx, "alkstore", NewJob::new("emails", b"order 1".to_vec())).await?;
/// tx.commit().await?;
/// # Ok(()) }
/// ```
pub async fn enqueue_in<C: GenericClient + Sync>(
    client: &C,
    schema: &str,
    job: NewJob,
) -> Result<Enqueued> {
    validate_schema_name(schema)?;
    job.validate(&Limits::default())?;
    let sql = statements_for(schema);
    let jobs = vec![job];
    let text = enqueue_text(&sql, is_keyed(&jobs));
    let mut out = insert_jobs(client, text, &sql, jobs, None).await?;
    out.pop()
        .ok_or_else(|| Error::database("job_enqueue", "the insert returned no id"))
}
