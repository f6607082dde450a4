//! The application's own transaction: every write of every primitive,
//! committed together with the application's own SQL, or not at all.
//!
//! Engines implement [`TxDriver`]: begin a transaction on a connection of
//! their own, hand out that connection, commit, roll back; each write is
//! an operation they drive on it ([`Drive`] with [`At::Tx`]). The one
//! wrapper, [`Transaction`], is what callers use: it validates every
//! call's input against the store's limits before anything is written (bad
//! input is refused and the transaction goes on unharmed, as it does when
//! the engine refuses input only the database can judge, such as an offset
//! beyond the stream's head, with [`Error::InvalidInput`]), and it
//! **poisons** the transaction when a call fails for any other reason: a
//! claim, lease or lock that is no longer the caller's
//! ([`Error::NotHeld`]), or a database error. A poisoned transaction never
//! commits: [`Transaction::commit`] rolls it back and returns
//! [`Error::RolledBack`] naming the first failure, so the application's own
//! writes vanish with it.
//!
//! What the fenced calls promise:
//!
//! - `job_ack` (and `job_settle`, `job_retry`, `job_fail`, `job_snooze`) only touches a job
//!   the caller's claim still holds, and keeps the job from being handed
//!   to anyone else until the transaction ends.
//! - `group_checkpoint` only moves a bucket's checkpoint
//!   under the lease epoch the caller holds, and keeps the lease from being
//!   taken over until the transaction ends.
//! - `stream_offset_commit` with an expectation
//!   ([`StreamOffsetCommitParams::expecting`](crate::stream::StreamOffsetCommitParams::expecting)) only moves a consumer's
//!   offset from the one the caller read, and keeps it there until the
//!   transaction ends, so two instances of a consumer cannot both commit
//!   their writes for the same events.
//! - `lock_fence` checks that a lock's fencing token is
//!   still the holder's and keeps it so until the transaction ends
//!   (PostgreSQL: a row lock that a takeover waits for; SQLite: the write
//!   lock the transaction holds), so the holder's writes can never land
//!   after the lock passed on.
//!
//! Dropping a transaction without committing rolls it back.

//!
//! Every operation runs through [`Place::run`] (under its name through
//! [`Writes`](crate::op::Writes)): the engine's one [`Drive`]
//! implementation of it, on the transaction's connection.

use std::future::Future;
use std::sync::Mutex;
use std::time::Instant;

use crate::op::{timed, wake, At, Drive, Hint, Op, Place, TxConn};
use crate::{Checked, Error, ErrorKind, Result};

/// Driver: what an engine implements so every primitive's writes can join
/// one transaction: begin, commit, roll back, and the connection its
/// operations run on ([`TxConn`], each operation's [`Drive`] with
/// [`At::Tx`]). SQL only: validation, poisoning, metrics and wake hints
/// are the wrapper's ([`Transaction`]).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait TxDriver: TxConn + Clone {
    /// The engine's open transaction. Dropping it rolls it back.
    type Tx: Send + 'static;

    /// Open a transaction on a connection of the engine's own (SQLite: it
    /// takes the write lock at once, waiting up to the busy timeout).
    fn tx_begin(&self) -> impl Future<Output = Result<Self::Tx>> + Send;

    /// Commit.
    fn tx_commit(&self, tx: Self::Tx) -> impl Future<Output = Result<()>> + Send;

    /// Roll back.
    fn tx_rollback(&self, tx: Self::Tx) -> impl Future<Output = Result<()>> + Send;

    /// The connection `tx` runs on, for an operation's [`Drive`]; an error
    /// when the transaction already ended on it.
    fn tx_conn<'a>(&'a self, tx: &'a mut Self::Tx) -> Result<Self::Conn<'a>>;
}

/// An open transaction carrying the writes of every primitive (see the
/// [module](self) docs): the operations of [`Writes`](crate::op::Writes)
/// under the same names as on the engine, one commit for all of them and
/// the application's own SQL.
///
/// ```no_run
/// # async fn demo<E>(engine: &E) -> alkstore_core::Result<()>
/// # where E: alkstore_core::tx::TxDriver
/// #     + alkstore_core::op::Drive<alkstore_core::queue::JobEnqueueParams>
/// #     + alkstore_core::op::Drive<alkstore_core::notify::NotifyParams> {
/// use alkstore_core::notify::NotifyParams;
/// use alkstore_core::op::Writes;
/// use alkstore_core::tx::Transaction;
/// use alkstore_core::NewJob;
/// let tx = Transaction::begin(engine).await?;
/// tx.job_enqueue(NewJob::new("emails", b"order 1".to_vec())).await?;
/// tx.notify(NotifyParams::new("orders", "1 placed")).await?;
/// tx.commit().await?;
/// # Ok(()) }
/// ```
///
/// Calls take `&self`, so handles on it can be held side by side; they run
/// one at a time, in the order they were made (a second call made while
/// one runs waits for it).
///
/// Dropped without [`Transaction::commit`], it rolls back; on PostgreSQL
/// that rollback is sent in the background, so the rows the transaction
/// locked (a claim it acked, a bucket it checkpointed) stay locked until
/// it reaches the server. Call [`Transaction::rollback`] and await it when
/// what follows needs those rows at once.
pub struct Transaction<E: TxDriver> {
    engine: E,
    state: Mutex<State<E::Tx>>,
    /// One call at a time, first come first served.
    turn: tokio::sync::Mutex<()>,
    started: Instant,
}

/// What a transaction keeps between calls.
struct State<T> {
    /// `None` once ended, or while a call runs on it.
    tx: Option<T>,
    /// The first failure after which the transaction must not commit.
    poisoned: Option<String>,
    /// This process's waiters to wake at commit.
    hints: Vec<Hint>,
}

impl<E: TxDriver> std::fmt::Debug for Transaction<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Transaction")
            .field("engine", &self.engine.capabilities().name)
            .field("open", &state.tx.is_some())
            .field("poisoned", &state.poisoned)
            .finish()
    }
}

impl<E: TxDriver> Transaction<E> {
    /// Open a transaction on `engine`.
    pub async fn begin(engine: &E) -> Result<Transaction<E>> {
        if engine.is_closed() {
            return Err(Error::Closed);
        }
        let tx = engine.tx_begin().await?;
        Ok(Transaction {
            engine: engine.clone(),
            state: Mutex::new(State {
                tx: Some(tx),
                poisoned: None,
                hints: Vec::new(),
            }),
            turn: tokio::sync::Mutex::new(()),
            started: Instant::now(),
        })
    }

    /// The state; a panic elsewhere while it was held leaves it usable.
    fn lock(&self) -> std::sync::MutexGuard<'_, State<E::Tx>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The engine's transaction, for the application's own SQL (the
    /// engine crates give it a native handle: a `rusqlite` connection, a
    /// `tokio_postgres` client). `None` once committed or rolled back.
    /// Borrowed mutably: no call of the transaction's can run meanwhile.
    pub fn driver_tx(&mut self) -> Option<&mut E::Tx> {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        state.tx.as_mut()
    }

    /// The engine the transaction runs on.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// Why the transaction can no longer commit, if it cannot.
    pub fn poisoned(&self) -> Option<String> {
        self.lock().poisoned.clone()
    }

    /// Mark the transaction as one that must not commit (a failure of the
    /// application's own that it wants to roll everything back on).
    pub fn poison(&self, op: &str, cause: &dyn std::fmt::Display) {
        let mut state = self.lock();
        if state.poisoned.is_none() {
            state.poisoned = Some(format!("{op} failed: {cause}"));
        }
    }

    /// Take the open transaction out for one call (its turn held):
    /// refused when it is poisoned or ended.
    fn take(&self, op: &'static str) -> Result<E::Tx> {
        let mut state = self.lock();
        if let Some(reason) = &state.poisoned {
            return Err(Error::RolledBack {
                op,
                reason: reason.clone(),
            });
        }
        state.tx.take().ok_or(Error::RolledBack {
            op,
            reason: "the transaction already ended".into(),
        })
    }

    /// Run one operation, unfenced: the output as the engine gave it
    /// (acks and settles report a lost claim as `false` or not-held
    /// outcomes, and poison nothing), for a caller that decides itself
    /// what a lost claim means (the worker's transactional batches). Every
    /// other failure poisons the transaction, as [`Place::run`] does.
    pub async fn run_unfenced<P: Op>(&self, params: impl Into<P> + Send) -> Result<P::Output>
    where
        E: Drive<P>,
    {
        self.call::<P>(P::NAME, params.into(), false).await
    }

    async fn call<P: Op>(&self, name: &'static str, params: P, fenced: bool) -> Result<P::Output>
    where
        E: Drive<P>,
    {
        timed(&self.engine, format!("tx_{name}"), async move {
            let _turn = self.turn.lock().await;
            // A poisoned or ended transaction refuses the call before its
            // input is looked at.
            let mut tx = self.take(name)?;
            // Should this future be dropped part-way (a timeout, a
            // `select!`), the transaction is dropped with it (rolled back)
            // and what is left of it refuses to commit, saying why.
            let mut guard = Putback {
                state: &self.state,
                name,
                tx: None,
                poisoned: None,
                hints: Vec::new(),
            };
            let p = match Checked::<P>::new(params, self.engine.limits()) {
                Ok(p) => p,
                Err(e) => {
                    // Refused input: the transaction as it was.
                    guard.tx = Some(tx);
                    return Err(e);
                }
            };
            let fence = if fenced { p.fence() } else { None };
            let hints = p.hints();
            let out = if let Some(out) = p.idle() {
                Ok(out)
            } else {
                // The connection goes into the engine's call at once: the
                // future holds no borrow of it (SQLite's is `!Sync`).
                let engine = &self.engine;
                let run = engine
                    .tx_conn(&mut tx)
                    .map(|conn| engine.drive(At::Tx(conn), p));
                match run {
                    Ok(run) => run.await,
                    Err(e) => Err(e),
                }
            };
            guard.tx = Some(tx);
            let out = match out {
                Ok(out) if fence.is_some() && P::lost(&out) => Err(Error::NotHeld {
                    what: fence.unwrap_or_default(),
                }),
                other => other,
            };
            guard.poisoned = match &out {
                Ok(_) => None,
                // Input only the database could judge (an offset beyond
                // the stream's head): refused, nothing of the call
                // written, the transaction as it was.
                Err(e) if e.kind() == ErrorKind::InvalidInput => None,
                Err(e) => Some(format!("{name} failed: {e}")),
            };
            if let Ok(out) = &out {
                if P::wakes(out) {
                    guard.hints = hints;
                }
            }
            out
        })
        .await
    }

    /// Commit every write made in the transaction, and wake this process's
    /// workers and readers. A poisoned transaction is rolled back instead
    /// and this returns [`Error::RolledBack`].
    pub async fn commit(self) -> Result<()> {
        let (tx, poisoned, hints) = {
            let mut state = self.lock();
            (
                state.tx.take(),
                state.poisoned.take(),
                std::mem::take(&mut state.hints),
            )
        };
        if let Some(reason) = poisoned {
            // Refused whatever the rollback does: a failed rollback still
            // ends the transaction (the engine discards the connection).
            if let Some(tx) = tx {
                if let Err(e) = self.engine.tx_rollback(tx).await {
                    tracing::warn!(error = %e, "rolling back a poisoned transaction failed");
                }
            }
            return Err(Error::RolledBack {
                op: "commit",
                reason,
            });
        }
        let Some(tx) = tx else {
            return Err(Error::RolledBack {
                op: "commit",
                reason: "the transaction already ended".into(),
            });
        };
        timed(
            &self.engine,
            "tx_commit".to_string(),
            self.engine.tx_commit(tx),
        )
        .await?;
        wake(self.engine.wake_hub(), hints);
        tracing::debug!(
            held_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "alkstore transaction committed"
        );
        Ok(())
    }

    /// Roll back every write made in the transaction.
    pub async fn rollback(self) -> Result<()> {
        let tx = self.lock().tx.take();
        match tx {
            Some(tx) => self.engine.tx_rollback(tx).await,
            None => Ok(()),
        }
    }
}

/// A transaction is a place: its calls are validated, fenced (a claim,
/// lease or lock found lost is [`Error::NotHeld`]), poisoned on failure,
/// and their hints wait for the commit.
impl<E: TxDriver> Place for Transaction<E> {
    type Engine = E;

    fn engine(&self) -> &E {
        &self.engine
    }

    fn run_as<P: Op>(
        &self,
        name: &'static str,
        params: impl Into<P> + Send,
    ) -> impl Future<Output = Result<P::Output>> + Send
    where
        E: Drive<P>,
    {
        self.call::<P>(name, params.into(), true)
    }
}

/// Puts the transaction back after a call, with its verdict. A call whose
/// future was dropped part-way never put the transaction back (it was
/// dropped, rolling back): what is left is poisoned, naming the call.
struct Putback<'s, T> {
    state: &'s Mutex<State<T>>,
    name: &'static str,
    tx: Option<T>,
    poisoned: Option<String>,
    hints: Vec<Hint>,
}

impl<T> Drop for Putback<'_, T> {
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match self.tx.take() {
            Some(tx) => state.tx = Some(tx),
            None => {
                self.poisoned = Some(format!("{} was cancelled before it finished", self.name));
            }
        }
        if let Some(reason) = self.poisoned.take() {
            if state.poisoned.is_none() {
                state.poisoned = Some(reason);
            }
        }
        state.hints.append(&mut self.hints);
    }
}
