//! Cross-process wake-ups for the engine's own autocommit writes, sent
//! after their commit instead of inside it.
//!
//! A NOTIFY in a transaction takes PostgreSQL's notification-queue lock at
//! commit and holds it through the commit's WAL flush: transactions that
//! notify commit one at a time and never share a flush. On one server,
//! one-row inserts that notify stayed at ~6.7k commits/s from 4 to 16
//! clients while plain ones went from 14k to 21k (`bench/probes/pg_commit.sh`).
//! So an autocommit enqueue or publish inserts without notifying and hands
//! its queue or stream here; one task sends what has gathered on one of
//! the engine's pooled connections (a dedicated one was one more
//! connection per writing process), one statement at a time, in a
//! transaction that commits without waiting for the flush (a wake-up is a
//! hint: nothing is lost with it, since workers find jobs by their
//! fallback poll anyway).
//! The first wake-up after a quiet spell goes at once; while writes keep
//! coming, what gathers goes at most once a millisecond, in one statement,
//! and a name already waiting costs a caller a set lookup, nothing more.
//!
//! Writes inside a transaction (the engine's [`PgTx`](crate::PgTx), the
//! application's own) still notify in the statement: only a commit the
//! engine does not see can deliver them at the right moment.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};

/// What the announcing task is asked to do.
enum Ask {
    /// Send what is pending.
    Send,
    /// Answer once everything asked before has been sent (or given up).
    Flush(oneshot::Sender<()>),
}

/// Names waiting to be sent. A name already waiting is not asked for
/// again: a busy queue costs a set lookup per call, not a message.
#[derive(Default)]
struct Pending {
    queues: BTreeSet<String>,
    streams: BTreeSet<String>,
}

/// The sending side, owned by the engine. The task ends once every clone
/// of the engine is gone and it has sent what was asked.
pub(crate) struct Announcer {
    asks: mpsc::UnboundedSender<Ask>,
    pending: Arc<Mutex<Pending>>,
    /// The receiving side until the first ask starts the task (an engine
    /// opened outside a runtime, or one that never writes, starts none).
    start: std::sync::Mutex<Option<Start>>,
}

struct Start {
    asks: mpsc::UnboundedReceiver<Ask>,
    pending: Arc<Mutex<Pending>>,
    /// The engine's pool (its connections' session mode does not matter:
    /// the statement sets its own commit mode).
    pool: Pool,
    /// What the pool connects to, for errors.
    target: String,
    queues: String,
    streams: String,
    /// Behind a transaction-mode pooler: the statement runs unnamed.
    unnamed: bool,
}

/// One statement for a whole gathering: `$1` channels, `$2` payloads. The
/// local `synchronous_commit` makes its commit skip the flush wait without
/// a session setting (which a transaction-mode pooler would hand to other
/// clients).
const SEND: &str = "SELECT set_config('synchronous_commit', 'off', true), \
     (SELECT count(pg_notify(c, p)) FROM unnest($1::text[], $2::text[]) AS t(c, p))";

impl Announcer {
    pub(crate) fn new(
        pool: Pool,
        target: String,
        queues: String,
        streams: String,
        unnamed: bool,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let pending = Arc::new(Mutex::new(Pending::default()));
        Announcer {
            asks: tx,
            pending: pending.clone(),
            start: std::sync::Mutex::new(Some(Start {
                asks: rx,
                pending,
                pool,
                target,
                queues,
                streams,
                unnamed,
            })),
        }
    }

    /// Wake other processes' workers of `queue` (this process's are hinted
    /// by the caller).
    pub(crate) fn queue(&self, queue: &str) {
        self.add(queue, |p| &mut p.queues);
    }

    /// Wake other processes' subscribers of `stream`.
    pub(crate) fn stream(&self, stream: &str) {
        self.add(stream, |p| &mut p.streams);
    }

    fn add(&self, name: &str, set: fn(&mut Pending) -> &mut BTreeSet<String>) {
        let added = match self.pending.lock() {
            Ok(mut p) => {
                let set = set(&mut p);
                !set.contains(name) && set.insert(name.to_string())
            }
            Err(_) => false,
        };
        if added {
            self.ask(Ask::Send);
        }
    }

    /// Wait until every wake-up asked for so far has been sent (or the
    /// attempt failed): before a short-lived process exits.
    pub(crate) async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.started() && self.asks.send(Ask::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    fn started(&self) -> bool {
        self.start.lock().map(|s| s.is_none()).unwrap_or(true)
    }

    fn ask(&self, ask: Ask) {
        if let Ok(mut start) = self.start.lock() {
            if let Some(s) = start.take() {
                match tokio::runtime::Handle::try_current() {
                    Ok(handle) => {
                        handle.spawn(run(s));
                    }
                    Err(_) => {
                        // No runtime to send from: workers in other
                        // processes find the job by their poll.
                        *start = Some(s);
                        return;
                    }
                }
            }
        }
        // Fails only once the task ended, when the runtime went down.
        let _ = self.asks.send(ask);
    }
}

/// Least time between the starts of two sends. The first wake-up after a
/// quiet spell goes at once; under a steady stream of writes they go at
/// most once per window, together. Each send is a transaction of its own
/// on the server: one per group commit (thousands a second) cost one-event
/// publishes from 4 callers 15 % of their rate (12.4k against 14.3k/s).
const WINDOW: Duration = Duration::from_millis(1);

/// The task: gather what has been asked, send it in one statement, repeat.
async fn run(mut s: Start) {
    // Wake-ups that cannot be sent: 100 ms, doubling to 2 s.
    let mut backoff =
        alkstore_core::Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    let mut flushes = Vec::new();
    let mut last_send: Option<tokio::time::Instant> = None;
    loop {
        // Wait for the first ask; within the window of the last send, wait
        // for its end; then take every ask that is waiting.
        let Some(first) = s.asks.recv().await else {
            return;
        };
        if let Some(at) = last_send {
            if at.elapsed() < WINDOW {
                tokio::time::sleep_until(at + WINDOW).await;
            }
        }
        let mut next = Some(first);
        while let Some(ask) = next {
            if let Ask::Flush(done) = ask {
                flushes.push(done);
            }
            next = s.asks.try_recv().ok();
        }
        let (queues, streams) = match s.pending.lock() {
            Ok(mut p) => (
                std::mem::take(&mut p.queues),
                std::mem::take(&mut p.streams),
            ),
            Err(_) => Default::default(),
        };
        if !queues.is_empty() || !streams.is_empty() {
            let mut channels = Vec::with_capacity(queues.len() + streams.len());
            let mut payloads = Vec::with_capacity(channels.capacity());
            for q in queues {
                channels.push(s.queues.clone());
                payloads.push(q);
            }
            for st in streams {
                channels.push(s.streams.clone());
                payloads.push(st);
            }
            last_send = Some(tokio::time::Instant::now());
            match send(&s, &channels, &payloads).await {
                Ok(()) => backoff.reset(),
                Err(e) => {
                    // Dropped, not retried: every worker polls. A server
                    // that is down is not asked again at once.
                    tracing::warn!(error = %e, "cannot send wake-ups; workers will find the writes by polling");
                    tokio::time::sleep(backoff.next()).await;
                }
            }
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
}

/// Send on a pooled connection: a kept statement, or (behind a
/// transaction-mode pooler) an unnamed one.
async fn send(s: &Start, channels: &[String], payloads: &[String]) -> alkstore_core::Result<()> {
    let client = crate::pool::checkout(&s.pool, &s.target).await?;
    let failed = crate::db("announce");
    if s.unnamed {
        let text_array = tokio_postgres::types::Type::TEXT_ARRAY;
        let params: [(&(dyn tokio_postgres::types::ToSql + Sync), _); 2] =
            [(&channels, text_array.clone()), (&payloads, text_array)];
        client.query_typed(SEND, &params).await.map_err(failed)?;
    } else {
        let send = client.prepare_cached(SEND).await.map_err(&failed)?;
        client
            .execute(&send, &[&channels, &payloads])
            .await
            .map_err(failed)?;
    }
    Ok(())
}

/// How a write wakes other processes' workers and subscribers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wakes {
    /// A NOTIFY in the statement, delivered when its transaction commits:
    /// for transactions the engine does not commit itself.
    AtCommit,
    /// None in the statement: the caller commits, then asks the
    /// [`Announcer`].
    AfterCommit,
}

impl Wakes {
    /// The channel parameter of a statement that notifies: `channel`, or
    /// empty (notify nothing).
    pub(crate) fn channel(self, channel: &str) -> &str {
        match self {
            Wakes::AtCommit => channel,
            Wakes::AfterCommit => "",
        }
    }
}
