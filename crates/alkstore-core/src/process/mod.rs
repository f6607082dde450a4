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
//! dead for [`PROCESS_RETENTION`] (by any process's next beat).

mod driver;
mod engine;
mod params;
mod types;

pub use driver::ProcessDriver;
pub use engine::ProcessEngine;
pub use params::*;
pub use types::*;

use std::time::Duration;

/// How long a dead process's row is still listed (as not alive) before a
/// beat deletes it.
pub const PROCESS_RETENTION: Duration = Duration::from_secs(3_600);
