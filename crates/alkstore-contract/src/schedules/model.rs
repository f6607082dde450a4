//! Schedules against a reference model: random sequences of registrations
//! (`@every` specs), pauses, resumes, removals and fire calls on two
//! schedules, with clock advances, run on the engine and on a plain-Rust
//! model with its own calendar, every answer compared (see
//! `src/model.rs`).

use alkstore_core::Writes as _;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use alkstore_core::schedule::{ScheduleFireParams, ScheduleSetParams};
use alkstore_core::{Clock, ErrorKind, ScheduleEngine};
use proptest::prelude::*;

use crate::Harness;

const EVERY_S: [i64; 4] = [1, 2, 5, 7];

/// One step of a schedule sequence.
#[derive(Debug, Clone)]
pub enum ScheduleOp {
    /// Register (or re-register) schedule `name`.
    Set {
        /// Which of the two schedules.
        name: usize,
        /// `@every` this many seconds (an index into 1, 2, 5, 7).
        every: usize,
        /// Most missed boundaries fired at once.
        max_catch_up: u32,
    },
    /// Pause a schedule.
    Pause {
        /// Which schedule.
        name: usize,
    },
    /// Resume a schedule.
    Resume {
        /// Which schedule.
        name: usize,
    },
    /// Remove a schedule.
    Remove {
        /// Which schedule.
        name: usize,
    },
    /// Fire what is due.
    Fire,
    /// Move the clock on.
    Advance {
        /// By this many milliseconds.
        ms: u64,
    },
}

fn op() -> impl Strategy<Value = ScheduleOp> {
    prop_oneof![
        3 => (0..2usize, 0..EVERY_S.len(), 1..4u32)
            .prop_map(|(name, every, max_catch_up)| ScheduleOp::Set { name, every, max_catch_up }),
        1 => (0..2usize).prop_map(|name| ScheduleOp::Pause { name }),
        1 => (0..2usize).prop_map(|name| ScheduleOp::Resume { name }),
        1 => (0..2usize).prop_map(|name| ScheduleOp::Remove { name }),
        3 => Just(ScheduleOp::Fire),
        3 => prop_oneof![1..2_000u64, 5_000..30_000u64].prop_map(|ms| ScheduleOp::Advance { ms }),
    ]
}

/// Sequences that once failed, shrunk: run first, every time.
fn regressions() -> Vec<Vec<ScheduleOp>> {
    vec![]
}

/// Random sequences of registrations, pauses, resumes, removals and fire
/// calls with clock advances behave on the engine as on the model: `@every`
/// boundaries are the multiples of the interval since the Unix epoch; a
/// new or changed spec waits for the first boundary after now, the same
/// spec keeps its pending one; a fire call fires each due, unpaused
/// schedule's due boundaries, the oldest `max_catch_up` of them, counts
/// the rest as skipped and moves on past now; a pause keeps the pending
/// boundary and a resume skips what passed meanwhile.
pub async fn random_schedule_operations_match_the_model<H: Harness>(h: &H) {
    let strategy = proptest::collection::vec(op(), 1..40);
    crate::model::check(strategy, regressions(), |name, ops| async move {
        run_case(h, &name, &ops).await
    })
    .await;
}

/// A schedule as the model holds it.
#[derive(Debug, Clone, Copy)]
struct MSchedule {
    every_ms: i64,
    max_catch_up: u32,
    paused: bool,
    next_ms: i64,
    last_ms: Option<i64>,
}

/// The first multiple of `every_ms` after `now_ms`.
fn next_after(every_ms: i64, now_ms: i64) -> i64 {
    (now_ms.div_euclid(every_ms) + 1) * every_ms
}

async fn run_case<H: Harness>(h: &H, case: &str, ops: &[ScheduleOp]) -> Result<(), String> {
    let e = h.engine();
    let names = [format!("{case}-a"), format!("{case}-b")];
    let queue = format!("{case}-q");
    let mut model: BTreeMap<usize, MSchedule> = BTreeMap::new();
    let mut log = String::new();
    let out = run_ops(h, &names, &queue, ops, &mut model, &mut log).await;
    // Leave nothing to fire in later cases, whatever happened.
    for name in &names {
        let _ = e.schedule_remove(name.as_str()).await;
    }
    out.map_err(|what| format!("{what}\n{log}"))
}

async fn run_ops<H: Harness>(
    h: &H,
    names: &[String; 2],
    queue: &str,
    ops: &[ScheduleOp],
    model: &mut BTreeMap<usize, MSchedule>,
    log: &mut String,
) -> Result<(), String> {
    let e = h.engine();
    let clock = h.clock();
    for (step, op) in ops.iter().enumerate() {
        let now = clock.now_ms();
        let _ = writeln!(log, "  {step}: {op:?} at {now} ms");
        match *op {
            ScheduleOp::Set {
                name,
                every,
                max_catch_up,
            } => {
                let every_ms = EVERY_S[every] * 1000;
                let spec = format!("@every {}s", EVERY_S[every]);
                let got = e
                    .schedule_set(
                        ScheduleSetParams::new(names[name].as_str(), spec, queue)
                            .max_catch_up(max_catch_up),
                    )
                    .await
                    .map_err(|x| x.to_string())?;
                let m = match model.get(&name) {
                    Some(old) if old.every_ms == every_ms => MSchedule {
                        max_catch_up,
                        ..*old
                    },
                    old => MSchedule {
                        every_ms,
                        max_catch_up,
                        paused: old.is_some_and(|o| o.paused),
                        next_ms: next_after(every_ms, now),
                        last_ms: old.and_then(|o| o.last_ms),
                    },
                };
                model.insert(name, m);
                let got = (got.paused, got.next_fire_at_ms);
                let want = (m.paused, Some(m.next_ms));
                if got != want {
                    return Err(format!(
                        "step {step}: set (paused, next): engine {got:?}, model {want:?}"
                    ));
                }
            }
            ScheduleOp::Pause { name } | ScheduleOp::Resume { name } => {
                let pause = matches!(op, ScheduleOp::Pause { .. });
                let got = if pause {
                    e.schedule_pause(names[name].as_str()).await
                } else {
                    e.schedule_resume(names[name].as_str()).await
                }
                .map(|i| (i.paused, i.next_fire_at_ms))
                .map_err(|x| x.kind());
                let want = match model.get_mut(&name) {
                    None => Err(ErrorKind::NotFound),
                    Some(m) => {
                        // Resuming a paused schedule skips what passed;
                        // resuming a running one changes nothing.
                        if !pause && m.paused {
                            m.next_ms = next_after(m.every_ms, now);
                        }
                        m.paused = pause;
                        Ok((m.paused, Some(m.next_ms)))
                    }
                };
                if got != want {
                    return Err(format!(
                        "step {step}: {op:?}: engine {got:?}, model {want:?}"
                    ));
                }
            }
            ScheduleOp::Remove { name } => {
                let got = e
                    .schedule_remove(names[name].as_str())
                    .await
                    .map_err(|x| x.to_string())?;
                let want = model.remove(&name).is_some();
                if got != want {
                    return Err(format!("step {step}: remove: engine {got}, model {want}"));
                }
            }
            ScheduleOp::Fire => {
                let report = e
                    .schedule_fire_due(ScheduleFireParams::new(1000))
                    .await
                    .map_err(|x| x.to_string())?;
                let mut got: Vec<(String, i64)> = report
                    .fired
                    .iter()
                    .filter(|f| names.contains(&f.schedule))
                    .map(|f| (f.schedule.clone(), f.boundary_ms))
                    .collect();
                got.sort();
                let mut want = Vec::new();
                let mut skipped = 0u64;
                for (&i, m) in model.iter_mut() {
                    if m.paused || m.next_ms > now {
                        continue;
                    }
                    let mut b = m.next_ms;
                    let mut fired = 0;
                    while b <= now {
                        if fired < m.max_catch_up {
                            want.push((names[i].clone(), b));
                            m.last_ms = Some(b);
                            fired += 1;
                        } else {
                            skipped += 1;
                        }
                        b += m.every_ms;
                    }
                    m.next_ms = b;
                }
                want.sort();
                if got != want {
                    return Err(format!(
                        "step {step}: fired (schedule, boundary): engine {got:?}, model {want:?}"
                    ));
                }
                // Only this case's schedules can be due (the others were
                // removed), so the skipped count is theirs.
                if report.skipped != skipped {
                    return Err(format!(
                        "step {step}: skipped: engine {}, model {skipped}",
                        report.skipped
                    ));
                }
            }
            ScheduleOp::Advance { ms } => clock.advance(Duration::from_millis(ms)),
        }
        // After every step, the listing as the model has it.
        let got: Vec<(String, bool, Option<i64>, Option<i64>)> = e
            .schedule_list()
            .await
            .map_err(|x| x.to_string())?
            .into_iter()
            .filter(|s| names.contains(&s.name))
            .map(|s| (s.name, s.paused, s.next_fire_at_ms, s.last_boundary_ms))
            .collect();
        let want: Vec<(String, bool, Option<i64>, Option<i64>)> = model
            .iter()
            .map(|(&i, m)| (names[i].clone(), m.paused, Some(m.next_ms), m.last_ms))
            .collect();
        if got != want {
            return Err(format!(
                "step {step}: list (name, paused, next, last): engine {got:?}, model {want:?}"
            ));
        }
    }
    Ok(())
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __schedules_model {
    ($then:path, $args:tt) => {
        $then! { @rows $args schedules::model [
            random_schedule_operations_match_the_model,
        ] }
    };
}
