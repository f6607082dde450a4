//! How alkstore is built, and why: one page per area, with the
//! measurements that decided it. The same pages are in the repository's
//! `docs/design/`; `docs/architecture.md` holds the contract and the tree.
//! Nothing here is code.

#[doc = include_str!("../../../docs/design/jobs.md")]
pub mod jobs {}

#[doc = include_str!("../../../docs/design/sqlite.md")]
pub mod sqlite {}

#[doc = include_str!("../../../docs/design/postgres.md")]
pub mod postgres {}

#[doc = include_str!("../../../docs/design/transactions.md")]
pub mod transactions {}

#[doc = include_str!("../../../docs/design/runtime.md")]
pub mod runtime {}

#[doc = include_str!("../../../docs/design/streams.md")]
pub mod streams {}

#[doc = include_str!("../../../docs/design/groups.md")]
pub mod groups {}

#[doc = include_str!("../../../docs/design/schedules.md")]
pub mod schedules {}

#[doc = include_str!("../../../docs/design/locks.md")]
pub mod locks {}

#[doc = include_str!("../../../docs/design/results.md")]
pub mod results {}

#[doc = include_str!("../../../docs/design/notify.md")]
pub mod notify {}

#[doc = include_str!("../../../docs/design/rates.md")]
pub mod rates {}
