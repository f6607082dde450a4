//! Every write operation, implemented once ([`Drive`]): on the engine's
//! writer (`At::Auto`, group commit) or on a connection inside a
//! transaction (`At::Tx`: the engine's own, [`SqliteTx`](crate::SqliteTx),
//! or the application's, [`Within`](crate::Within)), with the same SQL.
//!
//! A transaction's write runs here and now, before the call's future is
//! built: the future then holds no borrow of the `!Sync` connection, and
//! the application's own rusqlite transaction runs the same code.

use std::future::{ready, Future};

use alkstore_core::group::GroupCheckpointParams;
use alkstore_core::lock::LockFenceParams;
use alkstore_core::notify::NotifyParams;
use alkstore_core::queue::{JobAckParams, JobEnqueueParams, JobSettleParams};
use alkstore_core::schedule::{
    ScheduleInfo, ScheduleNameParams, SchedulePauseParams, ScheduleSetParams,
};
use alkstore_core::stream::{StreamOffsetCommitParams, StreamPublishParams};
use alkstore_core::{
    At, Checked, Drive, Enqueued, Result, RetryOutcome, Settled, Settlement, TxConn,
};
use futures_util::future::Either;
use rusqlite::Connection;

use crate::outbox::Within;
use crate::SqliteEngine;

impl TxConn for SqliteEngine {
    type Conn<'c> = &'c Connection;
}

/// Implement [`Drive`] for one operation: `$tx` runs it on a transaction's
/// connection (`$within`, a [`Within`]), `$auto` on the writer.
macro_rules! drive {
    ($p:ty => $out:ty, |$engine:ident, $params:ident| tx: |$within:ident| $tx:expr, auto: $auto:expr) => {
        impl Drive<$p> for SqliteEngine {
            fn drive<'a>(
                &'a self,
                at: At<&'a Connection>,
                $params: Checked<$p>,
            ) -> impl Future<Output = Result<$out>> + Send + 'a {
                let $engine = self;
                match at {
                    At::Tx(conn) => {
                        let $within = Within::new($engine, conn);
                        Either::Left(ready($tx))
                    }
                    At::Auto => Either::Right($auto),
                }
            }
        }
    };
}

drive!(JobEnqueueParams => Vec<Enqueued>, |engine, p|
    tx: |w| {
        let jobs = p.into_inner().jobs;
        // Ids reserved for this call alone: this connection keeps no
        // block between calls (its transaction may roll back, taking the
        // reservation with it). The reservation and the inserts commit
        // together: a reservation committed alone would let the writer
        // reserve above it and commit a higher id first.
        let block = i64::try_from(jobs.len()).unwrap_or(i64::MAX).max(1);
        w.all_or_none("job_enqueue", |conn| {
            crate::queues::enqueue::enqueue_in(conn, &jobs, engine.now(), &mut None, block)
        })
    },
    auto: crate::queues::enqueue::job_enqueue(engine, p));

drive!(JobAckParams => Vec<bool>, |engine, p|
    tx: |w| {
        let claims = p.into_inner().claims;
        w.all_or_none("job_ack", |conn| {
            crate::queues::settle::ack_in(conn, &claims, engine.now(), &mut Default::default())
        })
    },
    auto: crate::queues::settle::job_ack(engine, p));

drive!(JobSettleParams => Settlement, |engine, p|
    tx: |w| {
        let batch = p.into_inner().batch;
        w.all_or_none("job_settle", |conn| {
            let outcomes = crate::queues::settle::settle_in(conn, batch, engine.now())?;
            // Claimable once the transaction commits: wake then.
            let claimable_now = outcomes.iter().any(|o| {
                matches!(o, Settled::Retried(RetryOutcome::Scheduled(_)) | Settled::Snoozed(Some(_)))
            });
            Ok(Settlement { outcomes, claimable_now })
        })
    },
    auto: crate::queues::settle::job_settle(engine, p));

drive!(StreamPublishParams => Vec<i64>, |engine, p|
tx: |w| {
    // The counter bump and the inserts commit together: a counter
    // committed alone could let another publisher's later offset
    // become readable first.
    w.all_or_none("stream_publish", |conn| {
        crate::streams::insert_events(conn, &p.events, engine.now())
    })
},
auto: {
    let events = p.into_inner().events;
    engine.inner.writer.write_rows("stream_publish", events.len(), move |st| {
        crate::streams::insert_events(&st.conn, &events, st.clock.now())
    })
});

drive!(StreamOffsetCommitParams => i64, |engine, p|
tx: |w| w.all_or_none("stream_offset_commit", |conn| {
    crate::streams::offset_commit_in(conn, &p, engine.now())
}),
auto: {
    let p = p.into_inner();
    engine.inner.writer.write("stream_offset_commit", move |st| {
        crate::streams::offset_commit_in(&st.conn, &p, st.clock.now())
    })
});

drive!(NotifyParams => (), |engine, p|
tx: |w| w.all_or_none("notify", |conn| {
    crate::notify::insert(conn, &p.channel, &p.payload, engine.now_ms())
}),
auto: {
    let p = p.into_inner();
    engine.inner.writer.write("notify", move |st| {
        crate::notify::insert(&st.conn, &p.channel, &p.payload, st.clock.now_ms())
    })
});

drive!(ScheduleSetParams => ScheduleInfo, |engine, p|
tx: |w| w.all_or_none("schedule_set", |conn| {
    crate::schedules::set_in(conn, &p, engine.now_ms())
}),
auto: {
    let p = p.into_inner();
    engine.inner.writer.write("schedule_set", move |st| {
        crate::schedules::set_in(&st.conn, &p, st.clock.now_ms())
    })
});

drive!(ScheduleNameParams => bool, |engine, p|
tx: |w| w.all_or_none("schedule_remove", |conn| crate::schedules::remove_in(conn, &p.name)),
auto: {
    let p = p.into_inner();
    engine.inner.writer.write("schedule_remove", move |st| {
        crate::schedules::remove_in(&st.conn, &p.name)
    })
});

drive!(SchedulePauseParams => ScheduleInfo, |engine, p|
tx: |w| w.all_or_none("schedule_set_paused", |conn| {
    crate::schedules::set_paused_in(conn, &p.name, p.to.is_paused(), engine.now_ms())
}),
auto: {
    let p = p.into_inner();
    engine.inner.writer.write("schedule_set_paused", move |st| {
        crate::schedules::set_paused_in(&st.conn, &p.name, p.to.is_paused(), st.clock.now_ms())
    })
});

drive!(GroupCheckpointParams => i64, |engine, p|
tx: |w| w.all_or_none("group_checkpoint", |conn| {
    crate::groups::checkpoint::checkpoint_in(conn, &p, engine.now_ms())
}),
auto: {
    let p = p.into_inner();
    engine.inner.writer.write("group_checkpoint", move |st| {
        crate::groups::checkpoint::checkpoint_in(&st.conn, &p, st.clock.now_ms())
    })
});

drive!(LockFenceParams => (), |engine, p|
// One statement: nothing to undo.
tx: |w| crate::locks::fence_in(w.conn(), &p.name, p.token, engine.now_ms()),
auto: {
    let p = p.into_inner();
    engine.inner.writer.write("lock_fence", move |st| {
        crate::locks::fence_in(&st.conn, &p.name, p.token, st.clock.now_ms())
    })
});
