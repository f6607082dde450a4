//! How `alk` shows things: tables and detail views for people, one JSON
//! document for scripts (formatting helpers are in `text`).
//!
//! Every command builds its whole output as a `String` and hands it to
//! [`emit`], so a closed pipe (`alk jobs | head`) ends the command quietly
//! instead of panicking inside `println!`.

use std::io::Write;

use alkstore::{
    queue::{JobInfo, JobState, QueueStats},
    Error, Result, SweepReport,
};
use serde_json::{json, Value};

use super::text::{duration, now, payload_preview, payload_text, rfc3339, shorten, when};

/// Append one formatted line to a `String` (infallible, unlike `writeln!`
/// whose `fmt::Result` would need handling at every call).
macro_rules! outln {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        $out.push_str(&format!($($arg)*));
        $out.push('\n');
    }};
}

/// Write `bytes` to stdout and flush. A reader that went away (broken pipe)
/// is not an error: the output was simply not wanted any more.
pub(crate) fn emit(bytes: &[u8]) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::invalid("stdout", e)),
    }
}

/// One JSON document, pretty-printed, with a final newline.
pub(crate) fn json_text(value: &Value) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    s.push('\n');
    s
}

/// Progress for long operations goes to stderr, so stdout stays the result.
/// A closed stderr is ignored (there is nobody to tell).
pub(crate) fn progress(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// When a job finished: its death (dead jobs) or its ack (completed jobs).
fn finished_at(j: &JobInfo, state: JobState) -> Option<i64> {
    if j.state == state {
        j.died_at
    } else {
        None
    }
}

/// One job as a JSON object: every field, times as unix seconds, and the
/// whole payload (see [`payload_text`]). The state is as shown now
/// ([`JobInfo::shown_state`]: `retryable` and `scheduled` are pending jobs
/// due later), and only a processing job has a `claim_expires_at`.
pub(crate) fn job_json(j: &JobInfo) -> Value {
    let (payload, encoding) = payload_text(&j.payload);
    let errors: Vec<Value> = j
        .errors
        .iter()
        .map(|e| json!({ "attempt": e.attempt, "at": e.at, "error": e.error }))
        .collect();
    json!({
        "id": j.id,
        "queue": j.queue,
        "state": j.shown_state(now()),
        "priority": j.priority,
        "attempts": j.attempts,
        "max_attempts": j.max_attempts,
        "run_at": j.run_at,
        "created_at": j.created_at,
        "expires_at": j.expires_at,
        "worker": j.worker,
        "claim_expires_at": j.live_claim_expires_at(),
        "unique_key": j.unique_key,
        "tags": j.tags,
        "meta": j.meta,
        "cancel_requested": j.cancel_requested,
        "last_error": j.last_error,
        "errors": errors,
        "dead_reason": j.dead_reason,
        "died_at": finished_at(j, JobState::Dead),
        "completed_at": finished_at(j, JobState::Completed),
        "payload_bytes": j.payload.len(),
        "payload": payload,
        "payload_encoding": encoding,
    })
}

/// A list of jobs as one JSON array.
pub(crate) fn jobs_json(jobs: &[JobInfo]) -> Value {
    Value::Array(jobs.iter().map(job_json).collect())
}

/// A job's payload preview, its tags first (`[billing,vip] {"n":1}`).
fn tagged_preview(j: &JobInfo, width: usize) -> String {
    if j.tags.is_empty() {
        return payload_preview(&j.payload, width);
    }
    let tags = format!("[{}] ", j.tags.join(","));
    let rest = width.saturating_sub(tags.chars().count()).max(10);
    format!("{tags}{}", payload_preview(&j.payload, rest))
}

/// Live or completed jobs as a table.
pub(crate) fn jobs_table(jobs: &[JobInfo]) -> String {
    let mut out = String::new();
    outln!(
        out,
        "{:>10} {:<16} {:<10} {:>5} {:>8} {:<20}  payload",
        "id",
        "queue",
        "state",
        "prio",
        "attempts",
        "run_at"
    );
    let now = now();
    for j in jobs {
        outln!(
            out,
            "{:>10} {:<16} {:<10} {:>5} {:>8} {:<20}  {}",
            j.id,
            j.queue,
            j.shown_state(now),
            j.priority,
            format!("{}/{}", j.attempts, j.max_attempts),
            rfc3339(j.run_at),
            tagged_preview(j, 60)
        );
    }
    out
}

/// Dead letters as a table, with why and when they died and their last
/// error.
pub(crate) fn dead_table(jobs: &[JobInfo]) -> String {
    let mut out = String::new();
    outln!(
        out,
        "{:>10} {:<16} {:<10} {:>8} {:<20} {:<40}  payload",
        "id",
        "queue",
        "reason",
        "attempts",
        "died_at",
        "error"
    );
    for j in jobs {
        outln!(
            out,
            "{:>10} {:<16} {:<10} {:>8} {:<20} {:<40}  {}",
            j.id,
            j.queue,
            j.dead_reason.as_deref().unwrap_or("-"),
            format!("{}/{}", j.attempts, j.max_attempts),
            j.died_at.map(rfc3339).unwrap_or_else(|| "-".into()),
            shorten(j.last_error.as_deref().unwrap_or("-"), 39),
            tagged_preview(j, 40)
        );
    }
    out
}

/// Everything about one job, one field a line.
pub(crate) fn job_detail(j: &JobInfo, now: i64) -> String {
    let mut out = String::new();
    let state = match &j.dead_reason {
        Some(r) if j.state == JobState::Dead => format!("dead ({r})"),
        _ => j.shown_state(now).to_string(),
    };
    outln!(out, "id:               {}", j.id);
    outln!(out, "queue:            {}", j.queue);
    outln!(out, "state:            {state}");
    outln!(out, "priority:         {}", j.priority);
    outln!(out, "attempts:         {}/{}", j.attempts, j.max_attempts);
    outln!(out, "created_at:       {}", when(j.created_at, now));
    outln!(out, "run_at:           {}", when(j.run_at, now));
    if let Some(t) = j.expires_at {
        outln!(out, "expires_at:       {}", when(t, now));
    }
    if let Some(w) = &j.worker {
        outln!(out, "worker:           {w}");
    }
    if let Some(t) = j.live_claim_expires_at() {
        outln!(out, "claim_expires_at: {}", when(t, now));
    }
    if let Some(k) = &j.unique_key {
        outln!(out, "unique_key:       {k}");
    }
    if !j.tags.is_empty() {
        outln!(out, "tags:             {}", j.tags.join(", "));
    }
    if !j.meta.is_empty() {
        outln!(out, "meta:             {}", Value::Object(j.meta.clone()));
    }
    if matches!(j.state, JobState::Pending | JobState::Processing) {
        let flag = if j.cancel_requested { "yes" } else { "no" };
        outln!(out, "cancel_requested: {flag}");
    }
    if let Some(t) = finished_at(j, JobState::Dead) {
        outln!(out, "died_at:          {}", when(t, now));
    }
    if let Some(t) = finished_at(j, JobState::Completed) {
        outln!(out, "completed_at:     {}", when(t, now));
    }
    if !j.errors.is_empty() {
        outln!(out, "errors:");
        for e in &j.errors {
            outln!(
                out,
                "  attempt {} at {}: {}",
                e.attempt,
                rfc3339(e.at),
                shorten(&e.error, 2000)
            );
        }
    } else if let Some(e) = &j.last_error {
        outln!(out, "last_error:       {}", shorten(e, 2000));
    }
    outln!(
        out,
        "payload:          {} bytes: {}",
        j.payload.len(),
        payload_preview(&j.payload, 200)
    );
    if std::str::from_utf8(&j.payload).is_err() || j.payload.len() > 200 {
        outln!(
            out,
            "                  (alk job {} --payload writes it all)",
            j.id
        );
    }
    out
}

/// Queue counts as one JSON array (one object per queue, raw numbers),
/// each saying whether its queue is one of the `paused`.
pub(crate) fn stats_json(stats: &[QueueStats], paused: &[String]) -> Value {
    Value::Array(
        stats
            .iter()
            .map(|s| {
                json!({
                    "queue": s.queue,
                    "paused": paused.contains(&s.queue),
                    "ready": s.ready,
                    "scheduled": s.scheduled,
                    "processing": s.processing,
                    "expired_claims": s.expired_claims,
                    "expired": s.expired,
                    "dead": s.dead,
                    "completed": s.completed,
                    "oldest_ready_age_s": s.oldest_ready_age_s,
                })
            })
            .collect(),
    )
}

/// Queue counts as a table; the last column says which are `paused`.
pub(crate) fn stats_table(stats: &[QueueStats], paused: &[String]) -> String {
    let mut out = String::new();
    let row = |out: &mut String, cells: [&str; 10]| {
        let [q, ready, sched, proc_, claims, expired, dead, done, oldest, pause] = cells;
        outln!(
            out,
            "{q:<24} {ready:>9} {sched:>9} {proc_:>10} {claims:>14} {expired:>7} {dead:>8} {done:>9} {oldest:>12} {pause:>6}"
        );
    };
    row(
        &mut out,
        [
            "queue",
            "ready",
            "scheduled",
            "processing",
            "expired_claims",
            "expired",
            "dead",
            "completed",
            "oldest_ready",
            "paused",
        ],
    );
    for s in stats {
        let n = |v: u64| v.to_string();
        let oldest = s.oldest_ready_age_s.map(duration).unwrap_or("-".into());
        row(
            &mut out,
            [
                &s.queue,
                &n(s.ready),
                &n(s.scheduled),
                &n(s.processing),
                &n(s.expired_claims),
                &n(s.expired),
                &n(s.dead),
                &n(s.completed),
                &oldest,
                if paused.contains(&s.queue) {
                    "yes"
                } else {
                    "no"
                },
            ],
        );
    }
    out
}

/// A sweep's report as a JSON object.
pub(crate) fn sweep_json(r: &SweepReport) -> Value {
    json!({
        "expired": r.expired,
        "rescued": r.rescued,
        "exhausted": r.exhausted,
        "dead_pruned": r.dead_pruned,
        "completed_pruned": r.completed_pruned,
        "events_trimmed": r.events_trimmed,
    })
}

/// A sweep's report on one line, every field named.
pub(crate) fn sweep_line(r: &SweepReport) -> String {
    format!(
        "expired {} rescued {} exhausted {} dead_pruned {} completed_pruned {} events_trimmed {}\n",
        r.expired, r.rescued, r.exhausted, r.dead_pruned, r.completed_pruned, r.events_trimmed
    )
}
