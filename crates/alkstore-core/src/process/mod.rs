//! Processes: every worker, subscriber, group member and scheduler of an
//! application registers itself in the store and keeps its row fresh with
//! heartbeats, so an operator sees who is alive (host, pid, version, what
//! it works, how much it runs now) without reading job rows, and can ask
//! one to go quiet (claim nothing new) or stop, acted on at its next
//! heartbeat.
//!
//! A row is alive until its expiry (the beat's time plus its `ttl`, by the
//! store's clock); a process that stops cleanly removes its row, one that
//! died is shown as not alive, and its row is deleted once it has been
//! dead for [`PROCESS_RETENTION`] (by any process's next beat). The jobs
//! a dead worker had claimed go back to their queue at once (see
//! [`DEAD_PROCESS_RESCUE_WINDOW`]).

mod driver;
mod engine;
mod params;
mod types;

pub use driver::ProcessDriver;
pub use engine::ProcessEngine;
pub use params::*;
pub use types::*;

use std::time::Duration;

/// How long after a process's row expired (it missed its beats: it died
/// or froze) the claims it still holds are handed back at once, by the
/// next rescue of their queue, rather than at their own expiry. Past this
/// window their expiry does it; the window keeps rescues from looking up
/// the claims of long-dead processes every second. A claim handed back
/// this way is fenced as any other: the old holder's ack is refused.
pub const DEAD_PROCESS_RESCUE_WINDOW: Duration = Duration::from_secs(300);

/// How long a dead process's row is still listed (as not alive) before a
/// beat deletes it.
pub const PROCESS_RETENTION: Duration = Duration::from_secs(3_600);
