//! Whether the writer is inside a group transaction: shared with the
//! watcher of other connections' commits (`crate::watch`), which waits for
//! a group's end instead of looking while it runs.

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
    pub(super) fn begin(&self) {
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

    pub(super) fn end(&self) {
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
