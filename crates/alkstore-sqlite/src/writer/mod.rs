//! The single writer and its group commit.
//!
//! SQLite allows one writer at a time, so every write goes through one
//! connection. Callers queue closures; whichever caller finds the connection
//! free becomes the *leader*: it takes every queued closure, runs them in one
//! `BEGIN IMMEDIATE` transaction (each in its own savepoint, so one failing
//! command never undoes its neighbours; a command alone in its group needs
//! none), commits once, and only then hands each caller its result. Callers
//! that arrive while a leader is busy just wait for their result, and share
//! the leader's next commit. A caller yields once before trying to lead, so
//! callers its thread has just woken queue first and share that commit, and
//! up to twice more while fewer commands wait than the last group ran.
//!
//! Leading on the caller's own thread (instead of a dedicated writer thread)
//! saves two thread hand-offs per write, which on small VMs cost more than the
//! write itself. A leader serves a bounded number of groups, then hands the
//! rest of the queue to a spawned task so its own caller is not starved. On
//! a multi-thread runtime's worker it hands over sooner, when commands wait
//! but fewer than its last group ran: the callers that group woke are
//! queued on the leader's thread and cannot queue their next commands while
//! it leads, so the spawned task yields to them first and then leads a full
//! group where the leader would have led a few (4 callers: 1.8 commands
//! per commit before, 2.1 to 2.6 after). A spawned leader dropped unrun
//! (its runtime shutting down) wakes the writer's own thread to lead.
//!
//! A leader on a runtime thread never waits for another connection's lock:
//! it begins without waiting, and when the file is locked (another process
//! writes, or a transaction of the caller's own is open elsewhere) it hands
//! the group to a blocking thread that waits up to the busy timeout. Waiting
//! on the runtime thread could starve the very task that would release the
//! lock.
//!
//! Nor does it run a long group: when a queued command writes
//! [`OFF_RUNTIME_ROWS`] rows or more (a big claim or ack), the writer's own
//! thread leads instead, and goes on leading while commands keep coming. Run
//! on a runtime thread, such a group holds up every task queued there for
//! its whole run (a worker's freshly claimed jobs, its acks), and under load
//! the leadership hops between runtime threads, each group finding SQLite's
//! pages cold in its core's cache.
//!
//! Here: the queue of commands and who leads it. `group.rs` runs one group
//! transaction, `state.rs` is what its leader owns, `activity.rs` tells the
//! commit watcher when a group runs, and `queue_state.rs` holds what the
//! queue area keeps in the writer between groups.

mod activity;
mod group;
pub(crate) mod queue_state;
mod state;
#[cfg(test)]
mod tests;

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use alkstore_core::queue::RescueSchedule;
use alkstore_core::{Clock, Error, Result, WakeHub};
use rusqlite::Connection;
use tokio::sync::oneshot;

pub(crate) use activity::GroupActivity;
use group::{in_savepoint, run_group, Atomicity, Command, Group};
use state::GroupFailure;
pub(crate) use state::WriterState;

/// Groups a leader commits before handing leadership to a spawned task.
const MAX_GROUPS_PER_LEADER: usize = 4;

/// Rows a command writes (as it declares them) from which a leader on a
/// runtime thread leaves its group to the writer's own thread: about a
/// third of a millisecond of work, a few times the hand-off's cost. Per
/// command, not summed over the group: a group of smaller commands (a
/// producer's batches of 100 beside consumers' claims of 128) ran 15 %
/// slower handed off than led by its callers.
pub(crate) const OFF_RUNTIME_ROWS: usize = 256;

/// Commands waiting for a leader, and the most rows one of them says it
/// writes.
#[derive(Default)]
struct Queued {
    commands: Vec<Command>,
    largest: usize,
}

impl Queued {
    fn take(&mut self) -> Queued {
        std::mem::take(self)
    }
}

/// The write path: a queue of commands and the one write connection.
pub(crate) struct Writer {
    queue: Mutex<Queued>,
    /// The store's busy timeout, for the busy errors of its commands.
    busy_timeout: std::time::Duration,
    state: Mutex<WriterState>,
    /// Group transactions committed, and commands run in them.
    pub(crate) commits: std::sync::atomic::AtomicU64,
    pub(crate) commands: std::sync::atomic::AtomicU64,
    /// Nanoseconds spent running groups (begin to commit).
    pub(crate) busy_ns: std::sync::atomic::AtomicU64,
    /// Commands in the last group run.
    last_group: std::sync::atomic::AtomicUsize,
    /// See [`Writer::own_thread`].
    own_thread: std::sync::OnceLock<Option<std::thread::Thread>>,
    /// Whether a group is running (see [`GroupActivity`]).
    activity: Arc<GroupActivity>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Let the writer's own thread see that the engine is gone and end.
        if let Some(Some(thread)) = self.own_thread.get() {
            thread.unpark();
        }
    }
}

impl Writer {
    pub(crate) fn new(
        conn: Connection,
        clock: Arc<dyn Clock>,
        busy_timeout: std::time::Duration,
        hub: Arc<WakeHub>,
    ) -> Arc<Writer> {
        let activity = Arc::new(GroupActivity::default());
        Arc::new(Writer {
            activity: activity.clone(),
            queue: Mutex::new(Queued::default()),
            busy_timeout,
            state: Mutex::new(WriterState {
                conn,
                clock,
                rescues: RescueSchedule::default(),
                busy_timeout,
                queue_of: Default::default(),
                job_ids: None,
                hub,
                others_version: None,
                activity,
                begin_failure: None,
                sole_command: false,
                sole_command_failed: false,
            }),
            commits: Default::default(),
            commands: Default::default(),
            busy_ns: Default::default(),
            last_group: Default::default(),
            own_thread: std::sync::OnceLock::new(),
        })
    }

    /// Whether a group is running, for the commit watcher.
    pub(crate) fn activity(&self) -> Arc<GroupActivity> {
        self.activity.clone()
    }

    fn queue(&self) -> MutexGuard<'_, Queued> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `f` in the next group transaction; resolves after the commit.
    pub(crate) async fn write<T, F>(self: &Arc<Self>, op: &'static str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriterState) -> Result<T> + Send + 'static,
    {
        self.write_as(op, Atomicity::Savepoint, 1, f).await
    }

    /// [`Writer::write`] for an `f` that writes about `rows` rows: with
    /// [`OFF_RUNTIME_ROWS`] or more, its group runs off the runtime's
    /// threads (see the module's documentation).
    pub(crate) async fn write_rows<T, F>(
        self: &Arc<Self>,
        op: &'static str,
        rows: usize,
        f: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriterState) -> Result<T> + Send + 'static,
    {
        self.write_as(op, Atomicity::Savepoint, rows, f).await
    }

    /// [`Writer::write`] for an `f` that writes with one statement at most:
    /// SQLite undoes a failed statement by itself and the transaction goes
    /// on, so `f` needs no savepoint (two statements, and the sub-journal's
    /// page copies, saved per command).
    pub(crate) async fn write_one_statement<T, F>(
        self: &Arc<Self>,
        op: &'static str,
        f: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriterState) -> Result<T> + Send + 'static,
    {
        self.write_as(op, Atomicity::OneStatement, 1, f).await
    }

    async fn write_as<T, F>(
        self: &Arc<Self>,
        op: &'static str,
        atomicity: Atomicity,
        rows: usize,
        f: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriterState) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<T>>();
        let cmd: Command = Box::new(move |st: &mut WriterState| {
            let result = in_savepoint(st, op, atomicity, f);
            Box::new(move |group_failure: Option<&GroupFailure>| {
                let result = match group_failure {
                    None => result,
                    Some(failure) => Err(failure.error(op)),
                };
                let _ = tx.send(result);
            })
        });
        {
            let mut queue = self.queue();
            queue.commands.push(cmd);
            queue.largest = queue.largest.max(rows);
        }
        // Let callers this thread has already woken (typically by the last
        // group's results) queue their commands first, so they share this
        // commit instead of each leading a group of one.
        tokio::task::yield_now().await;
        // Fewer commands queued than the last group ran: its other callers
        // (on another runtime thread, say) are about to queue theirs. Yield
        // a little longer, so this caller shares their commit instead of
        // leading a group of its own (a lone caller never waits here).
        let mut more = 0;
        while more < 2
            && self.queue().commands.len()
                < self.last_group.load(std::sync::atomic::Ordering::Relaxed)
        {
            tokio::task::yield_now().await;
            more += 1;
        }
        self.lead();
        rx.await
            // Every command run or refused delivers a result; only one that
            // panicked drops its sender unanswered.
            .map_err(|_| {
                Error::database(op, "the write command panicked; nothing of it was written")
            })?
            .map_err(crate::busy_waited(self.busy_timeout))
    }

    /// Drain the queue if nobody else is. Whoever pushes a command then calls
    /// this, and a leader re-checks the queue after unlocking or hands it to
    /// a [`SpawnedLead`], so a command is never left without a leader.
    fn lead(self: &Arc<Self>) {
        // Without a runtime there is no blocking pool to hand waits to.
        let may_wait = tokio::runtime::Handle::try_current().is_err();
        self.lead_with(may_wait);
    }

    /// Run `batch` on this (blocking) thread once the connection is free,
    /// waiting for another connection's lock if need be; then lead on.
    fn lead_waiting(self: &Arc<Self>, batch: Vec<Command>) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // Ran or refused (it may wait, so it is never handed back).
        let _ = self.run_counted(&mut st, batch, true);
        drop(st);
        self.lead_with(true);
    }

    /// [`run_group`], counted in the writer's statistics before its
    /// callers get their results, so a caller that reads the counts once its
    /// call returned finds its group in them.
    fn run_counted(&self, st: &mut WriterState, batch: Vec<Command>, may_wait: bool) -> Group {
        use std::sync::atomic::Ordering::Relaxed;
        let n = batch.len() as u64;
        self.last_group.store(batch.len(), Relaxed);
        let started = std::time::Instant::now();
        let count = |committed: bool| {
            let busy = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.busy_ns.fetch_add(busy, Relaxed);
            if committed {
                self.commits.fetch_add(1, Relaxed);
                self.commands.fetch_add(n, Relaxed);
            }
        };
        run_group(st, batch, may_wait, &count)
    }

    /// Run `batch`, which found the file locked by another connection, on
    /// a blocking thread that may wait for the lock (here, outside a
    /// runtime).
    fn wait_elsewhere(self: &Arc<Self>, batch: Vec<Command>) {
        let me = self.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(h) => drop(h.spawn_blocking(move || me.lead_waiting(batch))),
            Err(_) => me.lead_waiting(batch),
        }
    }

    /// The writer's own thread, started the first time a group is handed
    /// to it (`None` if it could not start). It leads whenever unparked.
    /// One thread, not the blocking pool's any: the group then finds the
    /// pages of the last group in its core's cache.
    fn own_thread(self: &Arc<Self>) -> Option<&std::thread::Thread> {
        self.own_thread
            .get_or_init(|| {
                let writer = Arc::downgrade(self);
                std::thread::Builder::new()
                    .name("alkstore-writer".into())
                    .spawn(move || loop {
                        std::thread::park();
                        // Gone once the engine is dropped (which unparks us).
                        let Some(writer) = writer.upgrade() else {
                            return;
                        };
                        // Commands' panics are caught where they run; this
                        // keeps the thread, which long groups wait for, alive
                        // should anything else in leading panic.
                        let led = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            writer.lead_with(true);
                        }));
                        if led.is_err() {
                            tracing::error!("the sqlite writer thread caught a panic while leading");
                        }
                    })
                    .map(|t| t.thread().clone())
                    .map_err(|e| tracing::warn!(error = %e, "cannot start the sqlite writer thread; long groups run on the caller's"))
                    .ok()
            })
            .as_ref()
    }

    /// [`Writer::lead`]; `may_wait`: this thread may block on another
    /// connection's lock (a blocking thread, or no runtime at all).
    fn lead_with(self: &Arc<Self>, may_wait: bool) {
        let mut groups = 0;
        // Long groups go to the writer's own thread from a thread that runs
        // other tasks (see the module's documentation).
        let shared_runtime = match may_wait {
            true => None,
            false => shared_runtime(),
        };
        let hand_long_groups_off = shared_runtime.is_some();
        loop {
            let mut st = match self.state.try_lock() {
                Ok(st) => st,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => return,
            };
            loop {
                let batch = {
                    let mut queue = self.queue();
                    if queue.commands.is_empty() {
                        break;
                    }
                    if hand_long_groups_off && queue.largest >= OFF_RUNTIME_ROWS {
                        None
                    } else {
                        Some(queue.take().commands)
                    }
                };
                let batch = match batch {
                    Some(batch) => batch,
                    None => match self.own_thread() {
                        Some(thread) => {
                            // Unlock first: the thread takes the lock to lead.
                            drop(st);
                            thread.unpark();
                            return;
                        }
                        // No thread of its own: lead the group here after all.
                        None => self.queue().take().commands,
                    },
                };
                let ran = batch.len();
                match self.run_counted(&mut st, batch, may_wait) {
                    Group::Ran => {}
                    Group::Locked(batch) => {
                        drop(st);
                        self.wait_elsewhere(batch);
                        return;
                    }
                }
                groups += 1;
                // Fewer commands queued than the group just run: its callers,
                // woken onto this thread, have not queued their next ones
                // yet, and cannot while this thread leads. Lead from a task
                // that yields to them first instead, so they share its
                // commit. Only from a multi-thread runtime's worker: a
                // current-thread runtime may stop being driven (its
                // `block_on` returned) and leave the task unrun.
                if let Some(runtime) = &shared_runtime {
                    let queued = self.queue().commands.len();
                    let multi_thread =
                        runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread;
                    if multi_thread && queued > 0 && queued < ran {
                        drop(st);
                        let next = SpawnedLead(Some(self.clone()));
                        runtime.spawn(async move {
                            tokio::task::yield_now().await;
                            next.lead();
                        });
                        return;
                    }
                }
                if groups >= MAX_GROUPS_PER_LEADER {
                    break;
                }
            }
            drop(st);
            if self.queue().commands.is_empty() {
                return;
            }
            if groups >= MAX_GROUPS_PER_LEADER {
                let next = SpawnedLead(Some(self.clone()));
                match tokio::runtime::Handle::try_current() {
                    Ok(h) if may_wait => {
                        h.spawn_blocking(move || next.lead_waiting());
                        return;
                    }
                    Ok(h) => {
                        h.spawn(async move { next.lead() });
                        return;
                    }
                    Err(_) => groups = 0,
                }
            }
        }
    }
}

/// Leadership handed to a spawned task. Should the task be dropped unrun
/// (its runtime is shutting down), the writer's own thread leads instead,
/// so the queued commands still get a leader.
struct SpawnedLead(Option<Arc<Writer>>);

impl SpawnedLead {
    /// Lead on a runtime thread.
    fn lead(mut self) {
        if let Some(w) = self.0.take() {
            w.lead();
        }
    }

    /// Lead on a blocking thread, which may wait for another connection.
    fn lead_waiting(mut self) {
        if let Some(w) = self.0.take() {
            w.lead_with(true);
        }
    }
}

impl Drop for SpawnedLead {
    fn drop(&mut self) {
        if let Some(w) = self.0.take() {
            match w.own_thread() {
                Some(thread) => thread.unpark(),
                // No thread of its own: lead here, which may wait.
                None => w.lead_with(true),
            }
        }
    }
}

/// The runtime of this thread if the thread runs other tasks than the
/// caller's: a runtime's worker thread (the caller is a spawned task) or a
/// current-thread runtime's one thread. The thread of a multi-thread
/// runtime's `block_on` runs only the future it was given.
fn shared_runtime() -> Option<tokio::runtime::Handle> {
    let h = tokio::runtime::Handle::try_current().ok()?;
    let shared = tokio::task::try_id().is_some()
        || h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread;
    shared.then_some(h)
}
