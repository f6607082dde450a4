//! Schedules: a named spec (`@every 5m`, cron) that enqueues a job onto a
//! queue at each of its boundaries.
//!
//! Each schedule row holds its next boundary (`next_fire_at`). Firing a
//! due schedule advances `next_fire_at` and inserts the boundary's job in
//! one transaction, conditional on the `next_fire_at` it read: however
//! many schedulers run, with no leader, each boundary fires exactly once.
//! A scheduler that was down for a while fires at most `max_catch_up`
//! missed boundaries (oldest first; default 1) and skips the rest.

mod driver;
mod engine;
mod params;
mod spec;
mod types;

pub use driver::ScheduleDriver;
pub use engine::ScheduleEngine;
pub use params::*;
pub use spec::Spec;
pub use types::*;

use crate::validate::validate_text;
use crate::Result;

/// Reject empty, oversized or NUL-containing schedule names.
pub fn validate_schedule_name(name: &str) -> Result<()> {
    validate_text("schedule name", name)
}

/// The error for a schedule that does not exist.
pub fn schedule_not_found(name: &str) -> crate::Error {
    crate::Error::NotFound {
        what: format!("schedule {name:?}"),
        detail: "it was never registered, or was removed".into(),
    }
}

/// The next boundary a `schedule_set` stores: the pending one when the
/// spec and zone did not change (re-registering at every start-up neither
/// skips nor repeats one), else the first after `now_ms`.
pub fn next_on_set(
    old: Option<&ScheduleInfo>,
    params: &ScheduleSetParams,
    spec: &Spec,
    now_ms: i64,
) -> Option<i64> {
    match old {
        Some(o) if o.spec == params.spec && o.tz == params.tz => o.next_fire_at_ms,
        _ => spec.next_after(now_ms),
    }
}

/// The next boundary after pausing (kept) or resuming (the first after
/// `now_ms`: what passed while paused is skipped).
pub fn next_on_pause(old: &ScheduleInfo, paused: bool, now_ms: i64) -> crate::Result<Option<i64>> {
    if paused {
        return Ok(old.next_fire_at_ms);
    }
    Ok(Spec::parse(&old.spec, old.tz.as_deref())?.next_after(now_ms))
}

/// How many fires (boundaries and manual runs) each schedule's history
/// keeps.
pub const MAX_FIRES_KEPT: u32 = 50;

/// The unique key of the job fired for `boundary_ms` of schedule `name`:
/// `{name}@{boundary_ms}` — the job carries its boundary, and cannot be
/// enqueued twice while live.
pub fn fired_job_key(name: &str, boundary_ms: i64) -> String {
    format!("{name}@{boundary_ms}")
}

/// The job schedule `name` fires for `boundary_ms`: onto its queue, with
/// its payload and priority, `run_at` the boundary (whole seconds) and the
/// unique key [`fired_job_key`], its metadata `{"schedule": name}`.
pub fn fired_job(
    name: &str,
    queue: &str,
    payload: &[u8],
    priority: i32,
    boundary_ms: i64,
) -> crate::NewJob {
    let mut job = schedule_job(name, queue, payload, priority, boundary_ms);
    job.opts.unique_key = Some(fired_job_key(name, boundary_ms));
    job
}

/// The job a manual run of schedule `name` enqueues at `now_ms`: as
/// [`fired_job`], due now, but with no unique key, so every run is a job
/// of its own (two runs within a millisecond included), and metadata
/// `{"schedule": name, "manual": true}`.
pub fn manual_job(
    name: &str,
    queue: &str,
    payload: &[u8],
    priority: i32,
    now_ms: i64,
) -> crate::NewJob {
    let mut job = schedule_job(name, queue, payload, priority, now_ms);
    job.opts.meta.insert("manual".into(), true.into());
    job
}

/// A job of schedule `name`, due at `at_ms` (whole seconds), carrying
/// `{"schedule": name}`.
fn schedule_job(
    name: &str,
    queue: &str,
    payload: &[u8],
    priority: i32,
    at_ms: i64,
) -> crate::NewJob {
    crate::NewJob::new(queue, payload.to_vec()).with_opts(
        crate::EnqueueOpts {
            priority,
            run_at: Some(at_ms.div_euclid(1_000)),
            ..crate::EnqueueOpts::default()
        }
        .meta("schedule", name),
    )
}

/// What firing one due schedule at `now_ms` does: the boundaries to fire,
/// how many are skipped, the next boundary to store, and the boundary read
/// (the advance is conditional on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirePlan {
    /// Boundaries to fire, oldest first (at most `max_catch_up`).
    pub boundaries: Vec<i64>,
    /// Due boundaries skipped by the catch-up cap.
    pub skipped: u64,
    /// The next boundary after `now_ms` (`None`: the spec has none left).
    pub next: Option<i64>,
    /// The `next_fire_at` the plan was made from.
    pub read: i64,
}

/// Plan firing stored schedule `s` at `now_ms`; `None` (logged) when its
/// spec no longer parses — a zone removed from the tz database, a row
/// written by another version — so one bad row cannot stop the others, or
/// when it has no boundary left. Engines call this inside the transaction
/// that fires the schedule.
pub fn plan_fire(s: &ScheduleInfo, now_ms: i64) -> Option<FirePlan> {
    let read = s.next_fire_at_ms?;
    let spec = match Spec::parse(&s.spec, s.tz.as_deref()) {
        Ok(spec) => spec,
        Err(e) => {
            tracing::warn!(schedule = %s.name, error = %e, "skipping a schedule whose spec no longer parses");
            return None;
        }
    };
    let (boundaries, skipped, next) = due_boundaries(&spec, read, now_ms, s.max_catch_up);
    Some(FirePlan {
        boundaries,
        skipped,
        next,
        read,
    })
}

/// The boundaries of a due schedule to fire at `now_ms` (at most
/// `max_catch_up`, oldest first, starting at `next_fire_at`), and its next
/// boundary after `now_ms`. Engines call this inside the transaction that
/// fires the schedule.
pub fn due_boundaries(
    spec: &Spec,
    next_fire_at: i64,
    now_ms: i64,
    max_catch_up: u32,
) -> (Vec<i64>, u64, Option<i64>) {
    let mut fire = Vec::new();
    let mut at = Some(next_fire_at);
    while let Some(b) = at {
        if b > now_ms || fire.len() >= max_catch_up as usize {
            break;
        }
        fire.push(b);
        at = spec.next_after(b);
    }
    // Skipped: the due boundaries past the cap, counted up to a bound (a
    // long outage of a per-second schedule is not walked in full).
    let mut skipped = 0_u64;
    while let Some(b) = at {
        if b > now_ms {
            break;
        }
        skipped += 1;
        if skipped >= 10_000 {
            at = spec.next_after(now_ms);
            break;
        }
        at = spec.next_after(b);
    }
    (fire, skipped, at)
}
