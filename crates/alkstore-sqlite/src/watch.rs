//! The watcher of other connections' commits: a thread that hints every
//! listener when `PRAGMA data_version` moves, woken by inotify on Linux
//! and polling elsewhere. Apart from the engine because it runs on a
//! thread of its own, with a connection of its own.

use std::sync::Arc;
use std::time::Duration;

use alkstore_core::WakeHub;
use rusqlite::Connection;

#[cfg(target_os = "linux")]
use crate::connection::is_memory_uri;
use crate::connection::{data_version, open_connection};
use crate::writer::GroupActivity;
use crate::SqliteOptions;

/// Watch for commits by other connections and hint every listener. Ends
/// when the engine is dropped.
///
/// `PRAGMA data_version` changes whenever another connection commits. On
/// Linux the watcher sleeps until inotify reports a write to the `-wal` file
/// (no CPU while idle); elsewhere, or if inotify is unavailable, it polls the
/// pragma every millisecond while anyone listens. It never looks while a
/// group of this engine's writer runs ([`GroupActivity`]).
pub(crate) fn watch_data_version(
    opts: SqliteOptions,
    hub: std::sync::Weak<WakeHub>,
    activity: Arc<GroupActivity>,
) {
    let conn = match open_connection(&opts) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "data_version watcher cannot open the database");
            return;
        }
    };
    let mut last = data_version(&conn);
    // An in-memory store has no `-wal` file to watch: poll.
    #[cfg(target_os = "linux")]
    if !is_memory_uri(&opts.path) {
        match inotify_watch::run(&conn, &opts, &hub, &activity, &mut last) {
            Ok(()) => return,
            Err(e) => {
                tracing::info!(error = %e, "inotify unavailable; polling data_version instead")
            }
        }
    }
    loop {
        let Some(hub) = hub.upgrade() else { return };
        if !hub.has_listeners() {
            drop(hub);
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        activity.wait_for_end(GROUP_WAIT_LIMIT);
        changed(&conn, &mut last, &hub);
        drop(hub);
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Hint everyone when `data_version` moved; true when it did.
fn changed(conn: &Connection, last: &mut Option<i64>, hub: &WakeHub) -> bool {
    let now = data_version(conn);
    if now != *last {
        *last = now;
        hub.all();
        return true;
    }
    false
}

/// Longest the watcher waits for a group of this engine's writer to end
/// before looking anyway (it wakes at the end; this bounds a lost wake-up).
const GROUP_WAIT_LIMIT: Duration = Duration::from_millis(50);

#[cfg(target_os = "linux")]
mod inotify_watch {
    use std::ffi::OsString;
    use std::io::ErrorKind;
    use std::num::NonZeroU64;
    use std::path::Path;
    use std::sync::Weak;
    use std::time::{Duration, Instant};

    use alkstore_core::WakeHub;
    use inotify::{Inotify, WatchMask};
    use rusqlite::Connection;
    use rustix::event::{PollFd, PollFlags, Timespec};

    use super::{changed, GROUP_WAIT_LIMIT};
    use crate::writer::GroupActivity;
    use crate::SqliteOptions;

    /// Longest wait without an event before looking anyway (a safety net for
    /// file systems that do not report writes).
    const SAFETY_POLL: Duration = Duration::from_millis(250);

    /// Pauses between looks after a WAL write: every 0.05 ms for the first
    /// 1.5 ms (a commit without fsync is visible well within it: a woken
    /// worker's p99 stays under 2 ms), then coarser (about 50 ms in all,
    /// for commits that fsync first). Blocking sleeps, on a timer slack of
    /// 1 µs (see `run`).
    const RECHECK_PAUSES_US: [u64; 45] = [
        50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50,
        50, 50, 50, 50, 50, 50, 50, 200, 200, 200, 200, 200, 500, 500, 1_000, 2_000, 3_000, 5_000,
        8_000, 10_000, 10_000, 10_000,
    ];

    /// The directory's inotify watch, and which events are writes to the WAL.
    struct WalEvents {
        inotify: Inotify,
        wal: OsString,
        buffer: [u8; 4096],
    }

    impl WalEvents {
        /// Wait up to `timeout` for events; then read them all. Whether one
        /// was a write to the WAL, or the queue overflowed (look then too).
        fn wait(&mut self, timeout: Duration) -> std::io::Result<bool> {
            let timeout = Timespec::try_from(timeout).unwrap_or(Timespec {
                tv_sec: 1,
                tv_nsec: 0,
            });
            let mut fds = [PollFd::new(&self.inotify, PollFlags::IN)];
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(0) => return Ok(false),
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
            let mut wrote = false;
            loop {
                match self.inotify.read_events(&mut self.buffer) {
                    Ok(events) => {
                        for e in events {
                            wrote |= match e.name {
                                Some(name) => name == self.wal.as_os_str(),
                                None => true,
                            };
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(wrote),
                    Err(e) => return Err(e),
                }
            }
        }
    }

    pub(super) fn run(
        conn: &Connection,
        opts: &SqliteOptions,
        hub: &Weak<WakeHub>,
        activity: &GroupActivity,
        last: &mut Option<i64>,
    ) -> std::io::Result<()> {
        // The pauses below are tens of microseconds: without this, Linux
        // stretches each sleep by up to 50 µs (the default timer slack).
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1_000));
        let inotify = Inotify::init()?;
        let dir = opts
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        inotify
            .watches()
            .add(dir, WatchMask::MODIFY | WatchMask::CREATE)?;
        let mut wal = OsString::from(opts.path.file_name().unwrap_or_default());
        wal.push("-wal");
        let mut events = WalEvents {
            inotify,
            wal,
            buffer: [0u8; 4096],
        };
        let mut safety_at = Instant::now() + SAFETY_POLL;
        loop {
            let wrote = events.wait(safety_at.saturating_duration_since(Instant::now()))?;
            let now = Instant::now();
            let tick = now >= safety_at;
            if tick {
                safety_at = now + SAFETY_POLL;
            }
            let Some(h) = hub.upgrade() else {
                return Ok(());
            };
            if !h.has_listeners() || !(tick || wrote) {
                continue;
            }
            if !wrote {
                activity.wait_for_end(GROUP_WAIT_LIMIT);
                changed(conn, last, &h);
                continue;
            }
            // The WAL write comes before the commit becomes visible (the
            // shared-memory index is updated after it, and with
            // synchronous=full after an fsync): look, then again after each
            // pause, for up to ~50 ms. (Writes meanwhile wait in the queue,
            // and the next turn of the outer loop looks again.)
            let begun = activity.begun();
            for pause_us in RECHECK_PAUSES_US {
                // The write may be a group of our own writer's: no other
                // connection commits until it ends.
                activity.wait_for_end(GROUP_WAIT_LIMIT);
                // A group began since the write: it looked at its start.
                if activity.begun() != begun {
                    break;
                }
                if changed(conn, last, &h) {
                    break;
                }
                std::thread::sleep(Duration::from_micros(pause_us));
            }
        }
    }
}
