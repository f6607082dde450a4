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

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use alkstore_core::queue::RescueSchedule;
use alkstore_core::{Clock, Error, Result, WakeHub};
use rusqlite::Connection;
use tokio::sync::oneshot;

/// Groups a leader commits before handing leadership to a spawned task.
const MAX_GROUPS_PER_LEADER: usize = 4;

/// Rows a command writes (as it declares them) from which a leader on a
/// runtime thread leaves its group to the writer's own thread: about a
/// third of a millisecond of work, a few times the hand-off's cost. Per
/// command, not summed over the group: a group of smaller commands (a
/// producer's batches of 100 beside consumers' claims of 128) ran 15 %
/// slower handed off than led by its callers.
pub(crate) const OFF_RUNTIME_ROWS: usize = 256;

/// State owned by whoever holds the writer lock.
pub(crate) struct WriterState {
    pub conn: Connection,
    pub clock: Arc<dyn Clock>,
    /// When each queue's expired rows were last handed back (see
    /// `alkstore_core::queue::RescueSchedule`).
    pub rescues: RescueSchedule,
    /// How long `BEGIN IMMEDIATE` waits for another connection's lock.
    pub busy_timeout: std::time::Duration,
    /// The queue of each job this writer claimed and has not acked yet.
    pub queue_of: crate::queues::QueueOfJob,
    /// Ids this writer reserved for new jobs.
    pub job_ids: Option<crate::queues::JobIds>,
    /// Listeners to hint when a group finds that another connection has
    /// committed since the last group.
    hub: Arc<WakeHub>,
    /// `PRAGMA data_version` on this connection at the last group's start
    /// (see [`WriterState::others_committed`]).
    others_version: Option<i64>,
    /// Whether a group is running, for the commit watcher.
    activity: Arc<GroupActivity>,
    /// Set while a group could not begin: its commands fail with this error
    /// instead of running.
    begin_failure: Option<GroupFailure>,
    /// Set while a group of one command runs: it needs no savepoint of its
    /// own, because the group's transaction is rolled back if it fails.
    sole_command: bool,
    /// Set when that sole command failed: roll back instead of committing.
    sole_command_failed: bool,
}

impl WriterState {
    /// Whether another connection has committed since the last look (this
    /// connection's `PRAGMA data_version` moves only for those), or the
    /// version could not be read.
    fn others_committed(&mut self) -> bool {
        let version = crate::data_version(&self.conn);
        let moved = version.is_none() || version != self.others_version;
        self.others_version = version;
        moved
    }

    /// Forget what a rolled-back transaction may have written: rescue
    /// bookkeeping, and ids reserved for new jobs (another connection could
    /// reserve them again).
    fn forget_rolled_back(&mut self) {
        self.rescues.clear();
        self.job_ids = None;
    }
}

/// Why a group transaction failed: could not begin, was aborted, or could
/// not commit.
#[derive(Clone)]
enum GroupFailure {
    /// Another connection held the write lock for the whole busy timeout.
    Busy(u64),
    /// Anything else SQLite reported.
    Other(String),
    /// An earlier command of the group failed the whole group (it panicked,
    /// or SQLite rolled the transaction back): later ones are refused.
    GroupAborted(String),
}

impl GroupFailure {
    fn error(&self, op: &'static str) -> Error {
        match self {
            GroupFailure::Busy(waited_s) => Error::Busy {
                op,
                waited_s: *waited_s,
            },
            GroupFailure::Other(msg) => Error::database(op, msg.clone()),
            GroupFailure::GroupAborted(reason) => Error::Conflict {
                op,
                reason: format!("not run, because {reason}"),
            },
        }
    }
}

type Deliver = Box<dyn FnOnce(Option<&GroupFailure>) + Send>;
type Command = Box<dyn FnOnce(&mut WriterState) -> Deliver + Send>;

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

/// Whether the writer is inside a group transaction, for the watcher of
/// other connections' commits (`watch_data_version`). The group's own
/// writes to the `-wal` file wake the watcher; while the group runs, no
/// other connection can commit (the group holds SQLite's write lock), and
/// the group looked at the start for commits made before it. So the watcher
/// waits for the group's end instead of looking again and again while it
/// runs: those looks took the `-shm` locks the group needs and competed
/// with it for the CPU on small machines (the watcher spent 160–185 ms of
/// CPU per 400,000 jobs through a Worker; waiting, 25–42 ms).
#[derive(Default)]
pub(crate) struct GroupActivity {
    running: std::sync::atomic::AtomicBool,
    /// Groups begun so far.
    begun: std::sync::atomic::AtomicU64,
    /// Set while the watcher waits for the running group's end.
    waiting: std::sync::atomic::AtomicBool,
    /// The watcher's thread, to wake when the group ends.
    watcher: std::sync::OnceLock<std::thread::Thread>,
}

impl GroupActivity {
    fn begin(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.begun.fetch_add(1, SeqCst);
        self.running.store(true, SeqCst);
    }

    /// Groups begun so far: when it moves after the watcher saw a write to
    /// the `-wal` file, a group began after that write, and the group's
    /// look at its start saw the commit the write belonged to, if any (the
    /// writing connection held the write lock until it committed).
    pub(crate) fn begun(&self) -> u64 {
        self.begun.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn end(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.running.store(false, SeqCst);
        // SeqCst on both flags: either the watcher sees `running` false, or
        // this sees `waiting` true and wakes it.
        if self.waiting.load(SeqCst) {
            if let Some(watcher) = self.watcher.get() {
                watcher.unpark();
            }
        }
    }

    /// Wait (on the watcher's thread) until no group is running, at most
    /// `limit`.
    pub(crate) fn wait_for_end(&self, limit: std::time::Duration) {
        use std::sync::atomic::Ordering::SeqCst;
        if !self.running.load(SeqCst) {
            return;
        }
        let _ = self.watcher.set(std::thread::current());
        let deadline = std::time::Instant::now() + limit;
        self.waiting.store(true, SeqCst);
        while self.running.load(SeqCst) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::park_timeout(left);
        }
        self.waiting.store(false, SeqCst);
    }
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

/// What [`run_group`] did with a batch.
enum Group {
    /// It ran (committed or not: `count` was told which).
    Ran,
    /// Another connection holds the write lock and this thread may not
    /// wait for it: nothing ran, the batch is handed back.
    Locked(Vec<Command>),
}

/// `BEGIN IMMEDIATE`, waiting up to the busy timeout for another
/// connection's lock only when `may_wait`.
fn begin(st: &mut WriterState, may_wait: bool) -> rusqlite::Result<()> {
    let sql = "BEGIN IMMEDIATE";
    match may_wait {
        true => run_cached(&st.conn, sql),
        false => without_waiting(&st.conn, st.busy_timeout, sql),
    }
}

/// Run `sql` (a statement without parameters) on `conn`.
pub(crate) fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(drop)
}

/// Run `sql` on `conn` without waiting for another connection's lock
/// (`SQLITE_BUSY` at once), then give `conn` its `busy_timeout` back: for
/// a runtime thread, which must not sleep in SQLite's busy handler (see the
/// module's documentation).
pub(crate) fn without_waiting(
    conn: &Connection,
    busy_timeout: std::time::Duration,
    sql: &str,
) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::ZERO)?;
    let ran = run_cached(conn, sql);
    conn.busy_timeout(busy_timeout)?;
    ran
}

/// Run one group transaction.
/// `count` is told whether the group committed once it ran, before its
/// callers get their results (not when the file was locked: `Locked`).
fn run_group(
    st: &mut WriterState,
    batch: Vec<Command>,
    may_wait: bool,
    count: &dyn Fn(bool),
) -> Group {
    // A previous group may have left a transaction open (a failed ROLLBACK);
    // never build on it.
    if !st.conn.is_autocommit() {
        let _ = st.conn.execute_batch("ROLLBACK");
        st.forget_rolled_back();
    }
    let begin = begin(st, may_wait);
    if let Err(e) = &begin {
        if !may_wait && crate::is_busy(e) {
            return Group::Locked(batch);
        }
    }
    if let Err(e) = begin {
        // Each command reports why without running (see `in_savepoint`).
        let failure = if crate::is_busy(&e) {
            GroupFailure::Busy(st.busy_timeout.as_secs().max(1))
        } else {
            tracing::error!(error = %e, "sqlite writer could not begin a transaction");
            GroupFailure::Other(format!("begin: {e}"))
        };
        st.begin_failure = Some(failure);
        let delivers: Vec<Deliver> = batch.into_iter().map(|cmd| cmd(st)).collect();
        st.begin_failure = None;
        count(false);
        for d in delivers {
            d(None);
        }
        return Group::Ran;
    }
    // Another connection committed since the last group began: hint
    // listeners (the watcher leaves commits made before a group to this
    // look, see `GroupActivity`); and ids reserved since are below that
    // connection's, so take a new block. Once a group, not per job.
    if st.others_committed() {
        st.hub.all();
        st.job_ids = None;
    }
    st.activity.begin();
    let group = run_begun(st, batch, count);
    st.activity.end();
    group
}

/// [`run_group`] once its transaction has begun.
fn run_begun(st: &mut WriterState, batch: Vec<Command>, count: &dyn Fn(bool)) -> Group {
    let mut delivers: Vec<Deliver> = Vec::with_capacity(batch.len());
    let mut aborted: Option<String> = None;
    // A command alone in its group skips its savepoint (two statements and
    // the sub-journal's page copies); its failure rolls the group back.
    st.sole_command = batch.len() == 1;
    st.sole_command_failed = false;
    for cmd in batch {
        if let Some(reason) = &aborted {
            // Refused unrun (see `in_savepoint`): its caller learns why, and
            // nothing of it was written.
            st.begin_failure = Some(GroupFailure::GroupAborted(reason.clone()));
            delivers.push(cmd(st));
            st.begin_failure = None;
            continue;
        }
        match std::panic::catch_unwind(AssertUnwindSafe(|| cmd(st))) {
            Ok(deliver) => delivers.push(deliver),
            Err(_) => {
                aborted = Some("another write command of its group panicked".to_string());
                continue;
            }
        }
        // SQLite may roll the whole transaction back by itself (disk full,
        // I/O error). Later commands would then commit on their own, so stop.
        if st.conn.is_autocommit() {
            aborted = Some("SQLite rolled the group's transaction back".to_string());
        }
    }
    let sole_failed = std::mem::take(&mut st.sole_command_failed);
    st.sole_command = false;
    if sole_failed && aborted.is_none() {
        // Its own error is what its caller gets; nothing of it stays.
        let _ = st.conn.execute_batch("ROLLBACK");
        st.forget_rolled_back();
        count(false);
        for d in delivers {
            d(None);
        }
        return Group::Ran;
    }
    let err = match aborted {
        Some(reason) => {
            let _ = st.conn.execute_batch("ROLLBACK");
            st.forget_rolled_back();
            Some(GroupFailure::GroupAborted(reason))
        }
        None => {
            let commit = st
                .conn
                .prepare_cached("COMMIT")
                .and_then(|mut s| s.execute([]));
            match commit {
                Ok(_) => None,
                Err(e) => {
                    let _ = st.conn.execute_batch("ROLLBACK");
                    // Rescue bookkeeping may describe rolled-back work.
                    st.forget_rolled_back();
                    Some(if crate::is_busy(&e) {
                        GroupFailure::Busy(st.busy_timeout.as_secs().max(1))
                    } else {
                        GroupFailure::Other(format!("commit: {e}"))
                    })
                }
            }
        }
    };
    let committed = err.is_none();
    count(committed);
    for d in delivers {
        d(err.as_ref());
    }
    Group::Ran
}

/// What undoes a failed command without touching its group's others.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Atomicity {
    /// A savepoint around the command.
    Savepoint,
    /// The command writes with one statement, which SQLite undoes by itself
    /// when it fails.
    OneStatement,
}

fn in_savepoint<T>(
    st: &mut WriterState,
    op: &'static str,
    atomicity: Atomicity,
    f: impl FnOnce(&mut WriterState) -> Result<T>,
) -> Result<T> {
    if let Some(failure) = &st.begin_failure {
        return Err(failure.error(op));
    }
    if st.sole_command {
        let result = f(st);
        st.sole_command_failed = result.is_err();
        return result;
    }
    if atomicity == Atomicity::OneStatement {
        return f(st);
    }
    st.conn
        .prepare_cached("SAVEPOINT alk_cmd")
        .and_then(|mut s| s.execute([]))
        .map_err(|e| Error::database(op, e))?;
    let result = f(st);
    let end = if result.is_ok() {
        "RELEASE alk_cmd"
    } else {
        "ROLLBACK TO alk_cmd"
    };
    let ended = st
        .conn
        .prepare_cached(end)
        .and_then(|mut s| s.execute([]))
        .map_err(|e| Error::database(op, e));
    if result.is_err() {
        // The command's writes are undone, a reservation of ids with them.
        st.job_ids = None;
        // ROLLBACK TO keeps the savepoint open; release it too.
        let _ = st
            .conn
            .prepare_cached("RELEASE alk_cmd")
            .and_then(|mut s| s.execute([]));
    }
    ended?;
    result
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use alkstore_core::{ErrorKind, SystemClock};

    use super::*;

    /// A command alone in its group runs without a savepoint; when it
    /// fails after writing, the group's transaction is rolled back, so
    /// nothing of it stays, its caller gets its own error, and the next
    /// group commits as usual.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_sole_command_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("tmp");
        let conn = Connection::open(dir.path().join("w.db")).expect("open");
        conn.execute_batch("CREATE TABLE t (x INTEGER)")
            .expect("table");
        let w = Writer::new(
            conn,
            Arc::new(SystemClock),
            Duration::from_secs(1),
            Arc::default(),
        );
        let err = w
            .write("test", |st| -> Result<()> {
                st.conn
                    .execute("INSERT INTO t VALUES (1)", [])
                    .map_err(|e| Error::database("test", e))?;
                Err(Error::invalid("x", "refused after writing"))
            })
            .await
            .expect_err("the command failed");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        w.write("test", |st| {
            st.conn
                .execute("INSERT INTO t VALUES (2)", [])
                .map(|_| ())
                .map_err(|e| Error::database("test", e))
        })
        .await
        .expect("the next group commits");
        let rows: Vec<i64> = {
            let st = w.state.lock().expect("state");
            let mut s = st.conn.prepare("SELECT x FROM t").expect("select");
            let rows = s.query_map([], |r| r.get(0)).expect("rows");
            rows.collect::<rusqlite::Result<_>>().expect("collect")
        };
        assert_eq!(rows, vec![2], "only the second command's row stays");
    }

    /// One-statement commands share a group without savepoints: the one
    /// whose statement fails (a multi-row insert that breaks a constraint
    /// on its second row) gets its error, nothing of it stays, and its
    /// neighbours commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[allow(clippy::await_holding_lock)]
    async fn a_failing_one_statement_command_leaves_its_group_whole() {
        let dir = tempfile::tempdir().expect("tmp");
        let conn = Connection::open(dir.path().join("w.db")).expect("open");
        conn.execute_batch("CREATE TABLE t (x INTEGER UNIQUE)")
            .expect("table");
        let w = Writer::new(
            conn,
            Arc::new(SystemClock),
            Duration::from_secs(1),
            Arc::default(),
        );
        let held = w.state.lock().expect("state");
        let mut tasks = Vec::new();
        // Queued one after another, in this order (spawned at once, the
        // tasks could queue theirs in any order).
        for rows in ["(1)", "(2), (1)", "(3)"] {
            let w2 = w.clone();
            tasks.push(tokio::spawn(async move {
                w2.write_one_statement("test", move |st| {
                    st.conn
                        .execute(&format!("INSERT INTO t VALUES {rows}"), [])
                        .map(|_| ())
                        .map_err(|e| Error::database("test", e))
                })
                .await
            }));
            while w.queue().commands.len() < tasks.len() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        drop(held);
        w.lead();
        let results: Vec<bool> = {
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.expect("task").is_ok());
            }
            out
        };
        assert_eq!(results, vec![true, false, true]);
        let rows: Vec<i64> = {
            let st = w.state.lock().expect("state");
            let mut s = st
                .conn
                .prepare("SELECT x FROM t ORDER BY x")
                .expect("select");
            let rows = s.query_map([], |r| r.get(0)).expect("rows");
            rows.collect::<rusqlite::Result<_>>().expect("collect")
        };
        assert_eq!(
            rows,
            vec![1, 3],
            "the failed statement left no row (not even 2)"
        );
    }

    /// A command that panics fails its group: it reports the panic, every
    /// other command of the group gets a retryable `Conflict` (nothing of
    /// the group was written), and the writer goes on with the next group.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    // Holding the writer across the waits is the point: commands must queue.
    #[allow(clippy::await_holding_lock)]
    async fn a_panicking_command_fails_its_group_with_typed_errors() {
        let dir = tempfile::tempdir().expect("tmp");
        let conn = Connection::open(dir.path().join("w.db")).expect("open");
        conn.execute_batch("CREATE TABLE t (x INTEGER)")
            .expect("table");
        let w = Writer::new(
            conn,
            Arc::new(SystemClock),
            Duration::from_secs(1),
            Arc::default(),
        );
        let insert = |st: &mut WriterState| {
            st.conn
                .execute("INSERT INTO t VALUES (1)", [])
                .map(|_| ())
                .map_err(|e| Error::database("test", e))
        };
        // Hold the connection so the three commands queue into one group.
        let held = w.state.lock().expect("state");
        let tasks = [false, true, false].map(|panics| {
            let w = w.clone();
            tokio::spawn(async move {
                w.write("test", move |st| {
                    if panics {
                        panic!("boom");
                    }
                    insert(st)
                })
                .await
            })
        });
        while w.queue().commands.len() < 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        drop(held);
        w.lead();
        let mut kinds = Vec::new();
        for t in tasks {
            let err = t.await.expect("task").expect_err("the group failed");
            kinds.push((err.kind(), err.to_string().contains("panicked")));
        }
        assert_eq!(kinds[1], (ErrorKind::Database, true), "{kinds:?}");
        assert_eq!(kinds[0].0, ErrorKind::Conflict, "{kinds:?}");
        assert_eq!(kinds[2].0, ErrorKind::Conflict, "{kinds:?}");
        let rows = count_rows(&w);
        assert_eq!(rows, 0, "nothing of the group was written");
        w.write("test", insert).await.expect("the writer goes on");
    }

    /// A long group (a command declares [`OFF_RUNTIME_ROWS`] rows) runs on
    /// the writer's own thread, so the runtime's one thread keeps running
    /// other tasks meanwhile; a shorter write runs on the caller's thread;
    /// and the writer's thread ends with the engine.
    #[tokio::test(flavor = "current_thread")]
    async fn long_groups_leave_the_runtime_free() {
        let dir = tempfile::tempdir().expect("tmp");
        let conn = Connection::open(dir.path().join("w.db")).expect("open");
        conn.execute_batch("CREATE TABLE t (x INTEGER)")
            .expect("table");
        let w = Writer::new(
            conn,
            Arc::new(SystemClock),
            Duration::from_secs(1),
            Arc::default(),
        );
        let here = std::thread::current().id();
        let short = w
            .write("test", |_| Ok(std::thread::current().id()))
            .await
            .expect("short write");
        assert_eq!(short, here, "a short write runs on the caller's thread");
        let below = w
            .write_rows("test", OFF_RUNTIME_ROWS - 1, |_| {
                Ok(std::thread::current().id())
            })
            .await
            .expect("write below the threshold");
        assert_eq!(below, here, "below the threshold: the caller's thread");

        let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let ticker = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        let ticks_during = ticks.clone();
        let (thread, ticked) = w
            .write_rows("test", OFF_RUNTIME_ROWS, move |st| {
                st.conn
                    .execute("INSERT INTO t VALUES (1)", [])
                    .map_err(|e| Error::database("test", e))?;
                // A long group: the runtime's thread must stay free.
                let before = ticks_during.load(std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(200));
                let after = ticks_during.load(std::sync::atomic::Ordering::Relaxed);
                Ok((std::thread::current(), after - before))
            })
            .await
            .expect("long write");
        ticker.abort();
        assert_ne!(thread.id(), here, "the long group ran off the runtime");
        assert_eq!(thread.name(), Some("alkstore-writer"));
        assert!(
            ticked >= 5,
            "the runtime ran tasks meanwhile: {ticked} ticks"
        );
        let rows = count_rows(&w);
        assert_eq!(rows, 1, "the long group committed");

        // The thread holds the writer only while leading: once the engine's
        // last handle is gone, the writer goes and the thread ends.
        let weak = Arc::downgrade(&w);
        drop(w);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while weak.strong_count() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the writer was dropped"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        while !thread_ended(&thread) {
            assert!(
                std::time::Instant::now() < deadline,
                "the writer thread ended"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Rows in the tests' table `t`.
    fn count_rows(w: &Writer) -> i64 {
        let st = w.state.lock().expect("state");
        st.conn
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .expect("count")
    }

    /// Whether no thread of this process has `thread`'s name any more
    /// (checked through /proc, where names are cut at 15 bytes; elsewhere
    /// assumed ended).
    fn thread_ended(thread: &std::thread::Thread) -> bool {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return true;
        };
        let name = thread.name().unwrap_or_default();
        !tasks.flatten().any(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|comm| comm.trim() == name)
        })
    }

    /// The watcher waits for a running group's end, woken when it ends;
    /// without a group it does not wait; a group that does not end is
    /// waited for no longer than the limit.
    #[test]
    fn the_watcher_waits_for_the_running_group_to_end() {
        let activity = Arc::new(GroupActivity::default());
        let started = Instant::now();
        activity.wait_for_end(Duration::from_secs(5));
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "waited without a group"
        );

        activity.begin();
        let ender = {
            let activity = activity.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                activity.end();
            })
        };
        let started = Instant::now();
        activity.wait_for_end(Duration::from_secs(5));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(40),
            "did not wait: {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(4),
            "was not woken at the end: {waited:?}"
        );
        ender.join().expect("ender");
        assert_eq!(activity.begun(), 1);

        activity.begin();
        let started = Instant::now();
        activity.wait_for_end(Duration::from_millis(30));
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}
