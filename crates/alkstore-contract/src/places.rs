//! Where a write row runs its writes. A row written as
//! `pub async fn name<H: Harness>(h: &H, at: Where)` and listed with
//! `@places` runs three times: each write on its own (autocommit), inside
//! the engine's own transaction, and inside a transaction of the
//! application's own connection, each committed after the write. The
//! same behaviour must hold in all three.

use std::future::Future;

use alkstore_core::op::{Drive, Op};
use alkstore_core::{Place, Result, Transaction};

use crate::Harness;

/// Where a row's writes run (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// On the engine: each write commits on its own.
    Autocommit,
    /// Inside the engine's own transaction ([`Transaction`]), committed
    /// after the write.
    EngineTx,
    /// Inside a transaction of the application's own connection (the
    /// engine's `within(..)`), committed after the write.
    AppTx,
}

impl Where {
    /// Whether a write runs inside a transaction here: a claim, lease or
    /// lock found lost there is [`ErrorKind::NotHeld`](alkstore_core::ErrorKind::NotHeld)
    /// (the transaction is refused), where on its own it is a `false` or
    /// `None` result.
    pub fn in_tx(self) -> bool {
        self != Where::Autocommit
    }
}

/// A row's writes, made where `at` says: a [`Place`], so the row calls
/// the same named writes (`job_enqueue`, `stream_publish`, …, from
/// [`Writes`](alkstore_core::Writes)) it would call on the engine, and
/// each is committed where it ran before the call returns (a failed one's
/// transaction is rolled back before it returns).
#[derive(Debug, Clone, Copy)]
pub struct Writer<'h, H> {
    h: &'h H,
    at: Where,
}

/// The writes of a row running at `at` (see [`Writer`]).
pub fn writer<H: Harness>(h: &H, at: Where) -> Writer<'_, H> {
    Writer { h, at }
}

impl<H: Harness> Place for Writer<'_, H> {
    type Engine = H::Engine;

    fn engine(&self) -> &H::Engine {
        self.h.engine()
    }

    fn run_as<P: Op>(
        &self,
        name: &'static str,
        params: impl Into<P> + Send,
    ) -> impl Future<Output = Result<P::Output>> + Send
    where
        H::Engine: Drive<P>,
    {
        let params: P = params.into();
        let (h, at) = (self.h, self.at);
        async move {
            match at {
                Where::Autocommit => h.engine().run_as::<P>(name, params).await,
                Where::EngineTx => {
                    let tx = Transaction::begin(h.engine()).await?;
                    match tx.run_as::<P>(name, params).await {
                        Ok(out) => {
                            tx.commit().await?;
                            Ok(out)
                        }
                        Err(e) => {
                            // Rolled back before the row goes on: a dropped
                            // transaction's rollback may still be on its way,
                            // holding the rows the failed write locked.
                            let _ = tx.rollback().await;
                            Err(e)
                        }
                    }
                }
                Where::AppTx => h.in_app_tx(params).await,
            }
        }
    }
}

/// A fenced write (an ack, a settle, a checkpoint) whose claim, lease or
/// expected offset was lost: on its own it answers `alone` (a `false`, a
/// `None`); in a transaction it is refused with
/// [`ErrorKind::NotHeld`](alkstore_core::ErrorKind::NotHeld), so nothing
/// the transaction wrote commits.
pub fn assert_lost<T: std::fmt::Debug + PartialEq>(at: Where, out: Result<T>, alone: T) {
    if at.in_tx() {
        match out {
            Err(e) => assert_eq!(e.kind(), alkstore_core::ErrorKind::NotHeld, "{at:?}: {e}"),
            Ok(v) => panic!("{at:?}: a lost claim must refuse the transaction, got {v:?}"),
        }
    } else {
        assert_eq!(out.expect("the write"), alone, "{at:?}");
    }
}
