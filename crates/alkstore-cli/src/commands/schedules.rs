//! `alk schedules …`: register, inspect, pause and run schedules.

use alkstore::schedule::{ScheduleInfo, ScheduleSetParams, Scheduler};
use alkstore::{Result, Store, StoreOptions};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::output::json_text;
use super::text::{now, payload_preview, relative, shorten, unix_seconds_from_ms};

/// `alk schedules …`.
#[derive(Debug, Subcommand)]
pub(super) enum SchedulesCommand {
    /// Every schedule: spec, queue, next boundary, paused or not.
    List,
    /// Register a schedule, or change one of the same name.
    Add(AddArgs),
    /// Remove a schedule (jobs it enqueued stay).
    Remove {
        /// Schedule name.
        name: String,
    },
    /// Stop firing a schedule until resumed.
    Pause {
        /// Schedule name.
        name: String,
    },
    /// Fire a paused schedule again, from its next boundary after now.
    Resume {
        /// Schedule name.
        name: String,
    },
    /// Run a scheduler until SIGTERM or Ctrl-C (as many as you like: each
    /// boundary fires once).
    Run,
    /// Enqueue a schedule's job now, paused or not; its boundaries do not
    /// move.
    FireNow {
        /// Schedule name.
        name: String,
    },
    /// A schedule's last fires, newest first: boundary, job, and whether
    /// it was fired by hand.
    Fires {
        /// Schedule name.
        name: String,
        /// How many (1 to 50).
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
}

/// `alk schedules add`.
#[derive(Debug, Args)]
pub(super) struct AddArgs {
    /// Schedule name.
    name: String,
    /// `@every <n><s|m|h|d>` or a 5/6-field cron pattern (quote it).
    #[arg(long)]
    spec: String,
    /// Queue each boundary's job goes to.
    #[arg(long)]
    queue: String,
    /// IANA time zone for cron (default UTC).
    #[arg(long)]
    tz: Option<String>,
    /// Every job's payload (text; default `null`, JSON's null, which a
    /// JSON handler decodes: an empty payload would not).
    #[arg(long, default_value = "null")]
    payload: String,
    /// Every job's priority.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// Most missed boundaries fired at once after an outage.
    #[arg(long, default_value_t = 1)]
    catch_up: u32,
}

fn schedule_json(s: &ScheduleInfo) -> Value {
    json!({
        "name": s.name,
        "spec": s.spec,
        "tz": s.tz,
        "queue": s.queue,
        "payload": String::from_utf8_lossy(&s.payload),
        "priority": s.priority,
        "max_catch_up": s.max_catch_up,
        "paused": s.paused,
        "next_fire_at": s.next_fire_at_ms.map(unix_seconds_from_ms),
        "last_boundary": s.last_boundary_ms.map(unix_seconds_from_ms),
    })
}

fn schedules_table(list: &[ScheduleInfo]) -> String {
    let now = now();
    let mut out = format!(
        "{:<24} {:<20} {:<16} {:<20} {:<8} {}\n",
        "SCHEDULE", "SPEC", "QUEUE", "NEXT", "STATE", "PAYLOAD"
    );
    for s in list {
        let next = match (s.paused, s.next_fire_at_ms) {
            (true, _) => "-".to_string(),
            (false, Some(ms)) => relative(ms.div_euclid(1000), now),
            (false, None) => "never".to_string(),
        };
        let spec = match &s.tz {
            Some(tz) => format!("{} ({tz})", s.spec),
            None => s.spec.clone(),
        };
        out.push_str(&format!(
            "{:<24} {:<20} {:<16} {:<20} {:<8} {}\n",
            shorten(&s.name, 24),
            shorten(&spec, 20),
            shorten(&s.queue, 16),
            next,
            if s.paused { "paused" } else { "active" },
            payload_preview(&s.payload, 30)
        ));
    }
    out
}

fn one(s: &ScheduleInfo, as_json: bool) -> String {
    if as_json {
        json_text(&schedule_json(s))
    } else {
        schedules_table(std::slice::from_ref(s))
    }
}

/// `alk schedules add`'s parameters, checked before the store is opened
/// (or created): a refused spec leaves no new store file behind.
pub(super) fn prepare(a: AddArgs) -> Result<ScheduleSetParams> {
    let mut params = ScheduleSetParams::new(a.name, a.spec, a.queue)
        .payload(a.payload.into_bytes())
        .priority(a.priority)
        .max_catch_up(a.catch_up);
    if let Some(tz) = a.tz {
        params = params.tz(tz);
    }
    params.validate(&StoreOptions::default().limits)?;
    Ok(params)
}

/// `alk schedules add`: register the prepared schedule; the text to print.
pub(super) async fn add(store: &Store, params: ScheduleSetParams, as_json: bool) -> Result<String> {
    let p = params;
    let mut opts = alkstore::schedule::ScheduleOpts::default()
        .payload(p.payload)
        .priority(p.priority)
        .max_catch_up(p.max_catch_up);
    if let Some(tz) = p.tz {
        opts = opts.tz(tz);
    }
    let set = store
        .schedule(p.name)
        .set_with(p.spec, p.queue, opts)
        .await?;
    Ok(one(&set, as_json))
}

/// Run an `alk schedules` subcommand; the text to print.
pub(super) async fn run(store: &Store, cmd: SchedulesCommand, as_json: bool) -> Result<String> {
    Ok(match cmd {
        SchedulesCommand::List => {
            let list = store.schedules().await?;
            if as_json {
                json_text(&Value::Array(list.iter().map(schedule_json).collect()))
            } else {
                schedules_table(&list)
            }
        }
        SchedulesCommand::Add(a) => add(store, prepare(a)?, as_json).await?,
        SchedulesCommand::Remove { name } => {
            let removed = store.schedule(name.as_str()).remove().await?;
            if !removed {
                return Err(alkstore::schedule::schedule_not_found(&name));
            }
            if as_json {
                json_text(&json!({ "name": name, "removed": true }))
            } else {
                format!("removed {name}\n")
            }
        }
        SchedulesCommand::Pause { name } => one(&store.schedule(name).pause().await?, as_json),
        SchedulesCommand::Resume { name } => one(&store.schedule(name).resume().await?, as_json),
        SchedulesCommand::FireNow { name } => {
            let Some(f) = store.schedule(name.as_str()).run_now().await? else {
                return Err(alkstore::schedule::schedule_not_found(&name));
            };
            if as_json {
                json_text(&json!({
                    "schedule": f.schedule,
                    "queue": f.queue,
                    "job_id": f.job_id,
                    "boundary": unix_seconds_from_ms(f.boundary_ms),
                }))
            } else {
                format!("{name}: job {} enqueued on {}\n", f.job_id, f.queue)
            }
        }
        SchedulesCommand::Fires { name, limit } => {
            let fires = store.schedule(name).fires(limit).await?;
            if as_json {
                json_text(&Value::Array(
                    fires
                        .iter()
                        .map(|f| {
                            json!({
                                "schedule": f.schedule,
                                "boundary": unix_seconds_from_ms(f.boundary_ms),
                                "queue": f.queue,
                                "job_id": f.job_id,
                                "fired_at": unix_seconds_from_ms(f.fired_at_ms),
                                "manual": f.manual,
                            })
                        })
                        .collect(),
                ))
            } else {
                let now = now();
                let mut out = format!("{:<10} {:>10} {:<24} {}\n", "FIRED", "JOB", "QUEUE", "HOW");
                for f in &fires {
                    out.push_str(&format!(
                        "{:<10} {:>10} {:<24} {}\n",
                        relative(f.fired_at_ms / 1000, now),
                        f.job_id,
                        shorten(&f.queue, 24),
                        if f.manual { "by hand" } else { "boundary" }
                    ));
                }
                out
            }
        }
        SchedulesCommand::Run => {
            let report = Scheduler::new(store.clone())
                .run_until(alkstore::shutdown_signal())
                .await?;
            if as_json {
                json_text(&json!({ "fired": report.fired, "skipped": report.skipped }))
            } else {
                format!(
                    "scheduler stopped: {} fired, {} skipped\n",
                    report.fired, report.skipped
                )
            }
        }
    })
}
