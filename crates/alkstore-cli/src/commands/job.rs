//! `alk jobs` (listing) and `alk job` (one job: show, release).

use alkstore::{
    jobs::Jobs,
    queue::{JobListParams, JobState},
    Error, Result,
};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use super::output::{job_detail, job_json, jobs_json, jobs_table, json_text};
use super::text::now;

/// Arguments of `alk jobs`.
#[derive(Debug, Args)]
pub(super) struct ListArgs {
    /// Only this queue.
    #[arg(long)]
    pub(super) queue: Option<String>,
    /// Only this state (default: pending and processing).
    #[arg(long, value_enum)]
    state: Option<ListState>,
    /// Only jobs carrying this tag.
    #[arg(long)]
    tag: Option<String>,
    /// Only ids above this (paging: pass the last id shown).
    #[arg(long, allow_negative_numbers = true)]
    after: Option<i64>,
    /// Most rows (1..=10000).
    #[arg(long, default_value_t = 50)]
    limit: u32,
}

/// The states `alk jobs` lists (dead letters have `alk dead list`).
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ListState {
    /// Waiting: shown `pending` when due now, `retryable` when waiting out
    /// a retry's backoff, `scheduled` when its first run is due later.
    Pending,
    Processing,
    /// Acked jobs kept by queues with keep_completed.
    Completed,
}

/// Arguments of `alk job`: `alk job ID` shows a job; `alk job show|release
/// ID` name the action.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(super) struct JobArgs {
    #[command(subcommand)]
    action: Option<JobAction>,
    #[command(flatten)]
    show: ShowArgs,
}

/// What to do with one job.
#[derive(Debug, Subcommand)]
enum JobAction {
    /// Show the job (the same as `alk job ID`).
    Show(ShowArgs),
    /// Hand a processing job back to pending at once, without its worker
    /// (for a worker that is stuck or gone); the attempt is not counted.
    Release {
        /// Job id.
        id: i64,
    },
}

/// Arguments of `alk job [show] ID`.
#[derive(Debug, Args)]
struct ShowArgs {
    /// Job id.
    #[arg(required = true)]
    id: Option<i64>,
    /// Write the payload bytes to stdout exactly as stored, and nothing else.
    #[arg(long)]
    payload: bool,
}

/// Run `alk jobs`; returns what to print.
pub(super) async fn list(jobs: &Jobs, a: ListArgs, as_json: bool) -> Result<String> {
    let state = a.state.map(|s| match s {
        ListState::Pending => JobState::Pending,
        ListState::Processing => JobState::Processing,
        ListState::Completed => JobState::Completed,
    });
    let mut params = JobListParams::new(a.limit);
    params.queue = a.queue;
    params.state = state;
    params.tag = a.tag;
    params.after_id = a.after;
    let jobs = jobs.list(params).await?;
    Ok(if as_json {
        json_text(&jobs_json(&jobs))
    } else {
        jobs_table(&jobs)
    })
}

/// Run `alk job …`; returns the bytes to write on stdout.
pub(super) async fn run(jobs: &Jobs, a: JobArgs, as_json: bool) -> Result<Vec<u8>> {
    match a.action {
        Some(JobAction::Release { id }) => release(jobs, id, as_json).await,
        Some(JobAction::Show(show)) => show_job(jobs, show, as_json).await,
        None => show_job(jobs, a.show, as_json).await,
    }
}

async fn show_job(jobs: &Jobs, a: ShowArgs, as_json: bool) -> Result<Vec<u8>> {
    let id = a.id.ok_or_else(|| Error::invalid("job id", "missing"))?;
    if a.payload && as_json {
        return Err(Error::invalid(
            "options",
            "--payload writes raw bytes; it does not mix with --json",
        ));
    }
    let job = jobs.get(id).await?.ok_or_else(|| Error::NotFound {
        what: format!("job {id}"),
        detail: "finished jobs are deleted unless their queue keeps completed jobs".into(),
    })?;
    Ok(if a.payload {
        job.payload
    } else if as_json {
        json_text(&job_json(&job)).into_bytes()
    } else {
        job_detail(&job, now()).into_bytes()
    })
}

async fn release(jobs: &Jobs, id: i64, as_json: bool) -> Result<Vec<u8>> {
    if !jobs.unclaim(id).await? {
        return Err(Error::NotFound {
            what: format!("processing job {id}"),
            detail: "only a claimed job can be released".into(),
        });
    }
    Ok(if as_json {
        json_text(&json!({ "id": id, "released": true })).into_bytes()
    } else {
        format!("released {id}\n").into_bytes()
    })
}
