//! Every write operation, implemented once ([`Drive`]): on the engine's
//! autocommit path (`At::Auto`: the pool, and the combiner that writes
//! concurrent small enqueues and publishes together) or on a connection
//! inside a transaction (`At::Tx`: the engine's own, [`PgTx`](crate::PgTx),
//! or the application's, [`Within`](crate::Within)), with the same
//! statements (each area's `…_in` functions).

use std::future::Future;

use alkstore_core::group::GroupCheckpointParams;
use alkstore_core::lock::LockFenceParams;
use alkstore_core::notify::NotifyParams;
use alkstore_core::queue::{JobAckParams, JobEnqueueParams, JobSettleParams};
use alkstore_core::schedule::{
    ScheduleInfo, ScheduleNameParams, SchedulePauseParams, ScheduleSetParams,
};
use alkstore_core::stream::{StreamOffsetCommitParams, StreamPublishParams};
use alkstore_core::{At, Checked, Drive, Enqueued, Result, Settlement, TxConn};
use futures_util::future::Either;

use crate::announce::Wakes;
use crate::conn::{Exec, On};
use crate::queues::throughput::Tally;
use crate::PgEngine;

/// A connection inside an open transaction, as this engine's operations
/// take it: the engine's own ([`PgTx`](crate::PgTx)) or the application's
/// ([`Within`](crate::Within)).
pub struct PgConn<'c> {
    exec: ExecRef<'c>,
    /// Where the engine's own transaction counts the jobs it settles, to
    /// record them after its commit (the application's counts them in its
    /// statements).
    tally: Option<&'c Tally>,
}

enum ExecRef<'c> {
    On(On<'c>),
    Dyn(&'c (dyn Exec + 'c)),
}

impl<'c> PgConn<'c> {
    pub(crate) fn engine_tx(on: On<'c>, tally: &'c Tally) -> Self {
        PgConn {
            exec: ExecRef::On(on),
            tally: Some(tally),
        }
    }

    pub(crate) fn app(exec: &'c (dyn Exec + 'c)) -> Self {
        PgConn {
            exec: ExecRef::Dyn(exec),
            tally: None,
        }
    }

    fn exec(&self) -> &dyn Exec {
        match &self.exec {
            ExecRef::On(on) => on,
            ExecRef::Dyn(e) => *e,
        }
    }
}

impl std::fmt::Debug for PgConn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConn").finish_non_exhaustive()
    }
}

impl TxConn for PgEngine {
    type Conn<'c> = PgConn<'c>;
}

/// Implement [`Drive`] for one operation: `$tx` runs it on a transaction's
/// connection (`$conn`, a [`PgConn`]), `$auto` on the autocommit path.
macro_rules! drive {
    ($p:ty => $out:ty, |$engine:ident, $params:ident| tx: |$conn:ident| $tx:expr, auto: $auto:expr) => {
        impl Drive<$p> for PgEngine {
            fn drive<'a>(
                &'a self,
                at: At<PgConn<'a>>,
                $params: Checked<$p>,
            ) -> impl Future<Output = Result<$out>> + Send + 'a {
                let $engine = self;
                match at {
                    At::Tx($conn) => Either::Left(async move { $tx }),
                    At::Auto => Either::Right(async move { $auto }),
                }
            }
        }
    };
}

drive!(JobEnqueueParams => Vec<Enqueued>, |engine, p|
    tx: |c| {
        let (sql, now) = (&engine.inner.sql, engine.now_override());
        crate::queues::enqueue::enqueue_in(c.exec(), sql, p.into_inner().jobs, now, Wakes::AtCommit).await
    },
    auto: crate::queues::enqueue::job_enqueue(engine, p).await);

drive!(JobAckParams => Vec<bool>, |engine, p|
    tx: |c| {
        let (sql, now) = (&engine.inner.sql, engine.now_override());
        crate::queues::settle::ack_in(c.exec(), sql, now, &p.claims, c.tally).await
    },
    auto: crate::queues::settle::job_ack(engine, p).await);

drive!(JobSettleParams => Settlement, |engine, p|
    tx: |c| {
        let (sql, now) = (&engine.inner.sql, engine.now_override());
        let batch = p.into_inner().batch;
        let settled = crate::queues::settle::settle_all_in(c.exec(), sql, now, batch, c.tally).await?;
        let claimable_now = settled.iter().any(|(_, now)| *now);
        Ok(Settlement {
            outcomes: settled.into_iter().map(|(outcome, _)| outcome).collect(),
            claimable_now,
        })
    },
    auto: crate::queues::settle::job_settle(engine, p).await);

drive!(StreamPublishParams => Vec<i64>, |engine, p|
    tx: |c| {
        let (sql, now) = (&engine.inner.stream_sql, engine.now_override());
        crate::streams::publish_in(c.exec(), sql, now, &p.events, Wakes::AtCommit).await
    },
    auto: engine.publish_auto(p.into_inner().events).await);

drive!(StreamOffsetCommitParams => i64, |engine, p|
tx: |c| {
    let (sql, now) = (&engine.inner.stream_sql, engine.now_override());
    crate::streams::offset_commit_in(c.exec(), sql, now, &p).await
},
auto: {
    let client = engine.client().await?;
    let (sql, now) = (&engine.inner.stream_sql, engine.now_override());
    crate::streams::offset_commit_in(&engine.on(&client), sql, now, &p).await
});

drive!(NotifyParams => (), |engine, p|
tx: |c| crate::notify::send_in(c.exec(), engine.schema(), &p.channel, &p.payload).await,
auto: {
    let client = engine.client().await?;
    crate::notify::send_in(&engine.on(&client), engine.schema(), &p.channel, &p.payload).await
});

drive!(ScheduleSetParams => ScheduleInfo, |engine, p|
    tx: |c| {
        let (sql, now) = (&engine.inner.schedule_sql, engine.now_ms_override());
        crate::schedules::schedule_set_in(c.exec(), sql, now, &p).await
    },
    auto: crate::schedules::schedule_set(engine, &p).await);

drive!(ScheduleNameParams => bool, |engine, p|
tx: |c| crate::schedules::schedule_remove_in(c.exec(), &engine.inner.schedule_sql, &p).await,
auto: {
    let client = engine.client().await?;
    crate::schedules::schedule_remove_in(&engine.on(&client), &engine.inner.schedule_sql, &p).await
});

drive!(SchedulePauseParams => ScheduleInfo, |engine, p|
    tx: |c| {
        let (sql, now) = (&engine.inner.schedule_sql, engine.now_ms_override());
        crate::schedules::schedule_set_paused_in(c.exec(), sql, now, &p).await
    },
    auto: crate::schedules::schedule_set_paused(engine, &p).await);

drive!(GroupCheckpointParams => i64, |engine, p|
tx: |c| {
    let (sql, now) = (&engine.inner.group_sql, engine.now_ms_override());
    crate::groups::checkpoint_in(c.exec(), sql, now, &p).await
},
auto: {
    // Like acks (see `query_relaxed`): a checkpoint lost to a server
    // crash only means its events are delivered again.
    let client = engine.relaxed_client().await?;
    let (sql, now) = (&engine.inner.group_sql, engine.now_ms_override());
    crate::groups::checkpoint_in(&engine.on(&client), sql, now, &p).await
});

drive!(LockFenceParams => (), |engine, p|
tx: |c| {
    let (sql, now) = (&engine.inner.lock_sql, engine.now_ms_override());
    crate::locks::fence_in(c.exec(), sql, now, &p).await
},
auto: {
    let client = engine.client().await?;
    let (sql, now) = (&engine.inner.lock_sql, engine.now_ms_override());
    crate::locks::fence_in(&engine.on(&client), sql, now, &p).await
});
