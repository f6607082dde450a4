//! Every transactional call on a transaction the application opened
//! itself, on its own connection: tokio-postgres ([`PgEngine::within`]) or
//! sqlx (`PgEngine::within_sqlx`, feature `sqlx`). The same statements as
//! the engine's own transaction ([`Transaction`](alkstore_core::Transaction)) and the
//! autocommit calls, with the same names.

use alkstore_core::group::GroupCheckpointParams;
use alkstore_core::lock::LockFenceParams;
use alkstore_core::notify::NotifyParams;
use alkstore_core::queue::{
    JobAckParams, JobEnqueueParams, JobFailParams, JobSettleParams, JobSnoozeParams,
};
use alkstore_core::schedule::{ScheduleInfo, ScheduleNameParams, ScheduleSetParams};
use alkstore_core::stream::{StreamOffsetCommitParams, StreamPublishParams};
use alkstore_core::{
    Checked, Claim, Engine, Enqueued, Error, ErrorKind, JobRetryParams, Result, RetryOutcome,
    Settle, Settled,
};
use tokio_postgres::GenericClient;

use crate::conn::Exec;
use crate::PgEngine;

/// The engine's transactional calls on the application's own transaction
/// ([`PgEngine::within`] for tokio-postgres, `PgEngine::within_sqlx` for
/// sqlx): what it writes commits or rolls back with the application's own
/// SQL, when the application commits or rolls back.
///
/// The calls are those of the engine-neutral transaction, with the same
/// names and the same promises: a job acked, retried, failed or snoozed
/// stays the caller's until the transaction ends; a checkpointed bucket's
/// lease cannot be taken over until then; a fenced lock cannot pass on
/// until then (the lock's renewal and release wait as well). Workers and
/// subscribers of every process are woken at commit (PostgreSQL's NOTIFY).
///
/// **A failed call makes the transaction unable to commit**, as a failed
/// call poisons the engine's own transaction. Refused input
/// ([`ErrorKind::InvalidInput`](alkstore_core::ErrorKind), including what
/// only the database can judge, such as an offset beyond the stream's
/// head) writes nothing and harms nothing: the transaction goes on. Any
/// other failure (a claim, lease or lock the caller no longer holds is
/// [`Error::NotHeld`]; a database error) leaves the transaction aborted:
/// PostgreSQL refuses its later statements and turns its `COMMIT` into a
/// rollback, so the application's writes cannot commit without the
/// call's. Roll back. (On SQLite, whose transactions cannot be aborted
/// that way, `within` leaves the rollback to the caller.)
///
/// Use a transaction at READ COMMITTED (PostgreSQL's default). On a bare
/// client each call commits on its own, and the fences hold nothing
/// (every call still checks the claim, lease or lock it acts under).
///
/// **Ack, retry or fail late in the transaction**: each also counts the
/// job in the queue's throughput, in a counter row shared with other
/// workers (one of 16 shards per queue and 10 s bucket, by backend pid),
/// and that row stays locked until the transaction ends. Until then, acks
/// of that queue on a connection of the same shard wait for it, and two
/// transactions that settle jobs of two queues in opposite orders can
/// deadlock (PostgreSQL then aborts one of them). The engine's own
/// transaction ([`Transaction`](alkstore_core::Transaction)) counts after
/// its commit instead and takes no such lock.
///
/// ```no_run
/// # async fn demo(engine: &alkstore_postgres::PgEngine, client: &mut tokio_postgres::Client, claim: alkstore_core::Claim) -> Result<(), Box<dyn std::error::Error>> {
/// use alkstore_core::NewJob;
/// let tx = client.transaction().await?;
/// tx.execute("UPDATE orders SET state = 'mailed' WHERE id = 1", &[]).await?;
/// let outbox = engine.within(&tx);
/// outbox.job_ack(claim).await?; // the mail job that did it
/// outbox.job_enqueue(vec![NewJob::new("invoices", b"order 1".to_vec())]).await?;
/// tx.commit().await?;
/// # Ok(()) }
/// ```
pub struct Within<'e, 'c> {
    engine: &'e PgEngine,
    conn: Conn<'c>,
}

/// The application's connection. Nothing in it needs dropping, so a
/// `Within` borrows the transaction only until its last use: the
/// transaction can commit in the same scope.
enum Conn<'c> {
    /// A tokio-postgres client (a transaction's statements run on its
    /// client), and how statements run on it.
    Tokio(crate::conn::On<'c>),
    /// A sqlx connection.
    #[cfg(feature = "sqlx")]
    Sqlx(crate::conn::sqlx_conn::SqlxConn<'c>),
}

impl Conn<'_> {
    fn exec(&self) -> &dyn Exec {
        match self {
            Conn::Tokio(on) => on,
            #[cfg(feature = "sqlx")]
            Conn::Sqlx(conn) => conn,
        }
    }
}

impl std::fmt::Debug for Within<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Within")
            .field("engine", self.engine)
            .finish_non_exhaustive()
    }
}

impl PgEngine {
    /// The transactional calls ([`Within`]) on the application's own
    /// tokio-postgres transaction (or client): use this crate's
    /// re-exported [`tokio_postgres`], so both
    /// sides use the same driver.
    ///
    /// ```no_run
    /// # async fn demo(engine: &alkstore_postgres::PgEngine, client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::NewJob;
    /// let tx = client.transaction().await?;
    /// tx.execute("INSERT INTO orders (id) VALUES (1)", &[]).await?;
    /// engine.within(&tx).job_enqueue(vec![NewJob::new("emails", b"order 1".to_vec())]).await?;
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    pub fn within<'c, C: GenericClient + Sync>(&self, client: &'c C) -> Within<'_, 'c> {
        Within {
            engine: self,
            conn: Conn::Tokio(crate::conn::On::app(client.client(), self.app_how())),
        }
    }

    /// The transactional calls ([`Within`]) on the application's own sqlx
    /// transaction (or connection): pass `&mut *tx` for a
    /// `sqlx::Transaction<'_, Postgres>`. Feature `sqlx` (sqlx 0.8).
    ///
    /// ```no_run
    /// # async fn demo(engine: &alkstore_postgres::PgEngine, pool: &sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::NewJob;
    /// let mut tx = pool.begin().await?;
    /// sqlx::query("INSERT INTO orders (id) VALUES (1)").execute(&mut *tx).await?;
    /// engine.within_sqlx(&mut *tx).job_enqueue(vec![NewJob::new("emails", b"order 1".to_vec())]).await?;
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "sqlx")]
    pub fn within_sqlx<'c>(&self, conn: &'c mut sqlx::PgConnection) -> Within<'_, 'c> {
        Within {
            engine: self,
            conn: Conn::Sqlx(crate::conn::sqlx_conn::SqlxConn {
                conn: tokio::sync::Mutex::new(conn),
                persistent: self.inner.types.is_none(),
            }),
        }
    }
}

/// Run one call on the application's transaction: validate its input
/// (refused input changes nothing), run it, and leave the transaction
/// unable to commit when it failed for any reason but refused input.
macro_rules! within_call {
    ($self:ident, $params:expr => $ty:ty, |$e:ident, $engine:ident, $p:ident| $run:expr) => {{
        let $p = Checked::<$ty>::new($params, $self.engine.limits())?.into_inner();
        let $e: &dyn Exec = $self.conn.exec();
        let $engine: &PgEngine = $self.engine;
        let out = $run.await;
        if matches!(&out, Err(e) if e.kind() != ErrorKind::InvalidInput) {
            $self.conn.exec().abort().await;
        }
        out
    }};
}

impl Within<'_, '_> {
    /// Enqueue jobs (one, or a batch all or none): claimable once the
    /// transaction commits. Workers are woken at commit.
    pub async fn job_enqueue(
        &self,
        params: impl Into<JobEnqueueParams> + Send,
    ) -> Result<Vec<Enqueued>> {
        within_call!(self, params => JobEnqueueParams, |e, engine, p| async move {
            crate::queues::enqueue::enqueue_in(
                e,
                &engine.inner.sql,
                p.jobs,
                engine.now_override(),
                crate::announce::Wakes::AtCommit,
            )
            .await
        })
    }

    /// Complete a job the caller's claim holds: done when the transaction
    /// commits. A claim no longer held is [`Error::NotHeld`].
    pub async fn job_ack(&self, claim: Claim) -> Result<()> {
        let what = format!("claim on job {}", claim.id);
        within_call!(self, vec![claim] => JobAckParams, |e, engine, p| async move {
            let acked =
                crate::queues::settle::ack_in(e, &engine.inner.sql, engine.now_override(), &p.claims, None)
                    .await?;
            match acked.first() {
                Some(true) => Ok(()),
                _ => Err(Error::NotHeld { what }),
            }
        })
    }

    /// Retry a job the caller's claim holds (backoff, or dead when out of
    /// attempts), when the transaction commits. A claim no longer held is
    /// [`Error::NotHeld`].
    pub async fn job_retry(&self, params: JobRetryParams) -> Result<RetryOutcome> {
        match self.settle_one(Settle::Retry(params)).await? {
            Settled::Retried(outcome) => Ok(outcome),
            other => Err(unexpected("job_retry", &other)),
        }
    }

    /// Move a job the caller's claim holds to dead, when the transaction
    /// commits. A claim no longer held is [`Error::NotHeld`].
    pub async fn job_fail(&self, params: impl Into<JobFailParams> + Send) -> Result<()> {
        let JobFailParams { claim, error, .. } = params.into();
        match self.settle_one(Settle::Fail { claim, error }).await? {
            Settled::Failed(true) => Ok(()),
            other => Err(unexpected("job_fail", &other)),
        }
    }

    /// Put a job the caller's claim holds back, due after the delay,
    /// without using an attempt; returns when it is due. A claim no longer
    /// held is [`Error::NotHeld`].
    pub async fn job_snooze(&self, params: impl Into<JobSnoozeParams> + Send) -> Result<i64> {
        let JobSnoozeParams { claim, delay, .. } = params.into();
        match self.settle_one(Settle::Snooze { claim, delay }).await? {
            Settled::Snoozed(Some(at)) => Ok(at),
            other => Err(unexpected("job_snooze", &other)),
        }
    }

    async fn settle_one(&self, settle: Settle) -> Result<Settled> {
        let what = format!("claim on job {}", settle.claim().id);
        within_call!(self, vec![settle] => JobSettleParams, |e, engine, p| async move {
            let sql = &engine.inner.sql;
            let mut settled =
                crate::queues::settle::settle_all_in(e, sql, engine.now_override(), p.batch, None).await?;
            match settled.pop() {
                Some((
                    Settled::Retried(RetryOutcome::NotHeld)
                    | Settled::Failed(false)
                    | Settled::Snoozed(None),
                    _,
                )) => Err(Error::NotHeld { what }),
                Some((other, _)) => Ok(other),
                None => Err(Error::database("job_settle", "no outcome for the job")),
            }
        })
    }

    /// Publish events (one, or a batch all or none): readable once the
    /// transaction commits (and no later event of the stream is readable
    /// before that: keep the transaction short). Returns their offsets.
    pub async fn stream_publish(
        &self,
        params: impl Into<StreamPublishParams> + Send,
    ) -> Result<Vec<i64>> {
        within_call!(self, params => StreamPublishParams, |e, engine, p| async move {
            let sql = &engine.inner.stream_sql;
            crate::streams::publish_in(
                e,
                sql,
                engine.now_override(),
                &p.events,
                crate::announce::Wakes::AtCommit,
            )
            .await
        })
    }

    /// Save a consumer's offset (only forward) when the transaction
    /// commits.
    pub async fn stream_offset_commit(&self, params: StreamOffsetCommitParams) -> Result<i64> {
        within_call!(self, params => StreamOffsetCommitParams, |e, engine, p| async move {
            let sql = &engine.inner.stream_sql;
            crate::streams::offset_commit_in(e, sql, engine.now_override(), &p).await
        })
    }

    /// Send a notification that listeners get when the transaction
    /// commits (and never, if it rolls back).
    pub async fn notify(
        &self,
        channel: impl Into<String>,
        payload: impl Into<String>,
    ) -> Result<()> {
        let params = NotifyParams::new(channel, payload);
        within_call!(self, params => NotifyParams, |e, engine, p| async move {
            crate::notify::send_in(e, engine.schema(), &p.channel, &p.payload).await
        })
    }

    /// Register or change a schedule when the transaction commits.
    pub async fn schedule_set(&self, params: ScheduleSetParams) -> Result<ScheduleInfo> {
        within_call!(self, params => ScheduleSetParams, |e, engine, p| async move {
            let sql = &engine.inner.schedule_sql;
            crate::schedules::schedule_set_in(e, sql, engine.now_ms_override(), &p).await
        })
    }

    /// Remove a schedule when the transaction commits; `false` when there
    /// was none.
    pub async fn schedule_remove(
        &self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> Result<bool> {
        within_call!(self, params => ScheduleNameParams, |e, engine, p| async move {
            crate::schedules::schedule_remove_in(e, &engine.inner.schedule_sql, &p).await
        })
    }

    /// Pause a schedule when the transaction commits.
    /// [`NotFound`](Error::NotFound) when there is none.
    pub async fn schedule_pause(
        &self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> Result<ScheduleInfo> {
        self.set_paused(params.into(), true).await
    }

    /// Resume a paused schedule when the transaction commits.
    /// [`NotFound`](Error::NotFound) when there is none.
    pub async fn schedule_resume(
        &self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> Result<ScheduleInfo> {
        self.set_paused(params.into(), false).await
    }

    async fn set_paused(&self, params: ScheduleNameParams, paused: bool) -> Result<ScheduleInfo> {
        within_call!(self, params => ScheduleNameParams, |e, engine, p| async move {
            let sql = &engine.inner.schedule_sql;
            crate::schedules::schedule_set_paused_in(e, sql, engine.now_ms_override(), &p, paused)
                .await
        })
    }

    /// Save a bucket's checkpoint under the lease epoch the caller holds;
    /// the lease cannot be taken over until the transaction ends. A lease
    /// no longer held is [`Error::NotHeld`].
    pub async fn group_checkpoint(&self, params: GroupCheckpointParams) -> Result<i64> {
        within_call!(self, params => GroupCheckpointParams, |e, engine, p| async move {
            let sql = &engine.inner.group_sql;
            crate::groups::checkpoint_in(e, sql, engine.now_ms_override(), &p).await
        })
    }

    /// Fence the transaction's writes with a lock: check that `token` is
    /// still the holder's and keep it so until the transaction ends (a
    /// takeover waits for it). A lock that lapsed or passed on is
    /// [`Error::NotHeld`].
    pub async fn lock_fence(&self, name: impl Into<String>, token: i64) -> Result<()> {
        let params = LockFenceParams::new(name, token);
        within_call!(self, params => LockFenceParams, |e, engine, p| async move {
            crate::locks::fence_in(e, &engine.inner.lock_sql, engine.now_ms_override(), &p).await
        })
    }
}

/// A settle outcome of another kind than asked for (or a not-held one).
fn unexpected(op: &'static str, got: &Settled) -> Error {
    Error::database(op, format!("unexpected outcome {got:?}"))
}
