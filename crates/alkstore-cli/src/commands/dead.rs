//! `alk dead`: list dead letters, and requeue or purge them in bounded
//! batches.

use alkstore::{
    jobs::Jobs,
    queue::{DeadListParams, DeadSelect},
    Error, Result,
};
use clap::{Args, Subcommand};
use serde_json::json;

use super::output::{dead_table, jobs_json, json_text, progress};

/// Largest batch one engine call accepts.
const MAX_BATCH: u32 = 10_000;

/// `alk dead …`.
#[derive(Debug, Subcommand)]
pub(super) enum DeadCommand {
    /// List dead letters: why and when they died, and their last error.
    List {
        /// Only this queue.
        #[arg(long)]
        queue: Option<String>,
        /// Only dead letters carrying this tag.
        #[arg(long)]
        tag: Option<String>,
        /// Only ids above this (paging: pass the last id shown).
        #[arg(long, allow_negative_numbers = true)]
        after: Option<i64>,
        /// Most rows (1..=10000).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Move dead letters back to pending with fresh attempts, in batches.
    Requeue(DeadSelectArgs),
    /// Delete dead letters, in batches.
    Purge(DeadSelectArgs),
}

/// Which dead letters a bulk command acts on, and how.
#[derive(Debug, Args)]
pub(super) struct DeadSelectArgs {
    /// Only this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Only these ids (repeatable).
    #[arg(long = "id")]
    ids: Vec<i64>,
    /// Required to act on every queue when neither --queue nor --id is given.
    #[arg(long)]
    all: bool,
    /// Dead letters per transaction; each batch commits before the next.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_BATCH)))]
    batch: u32,
    /// Only say how many dead letters match; change nothing.
    #[arg(long)]
    dry_run: bool,
}

impl DeadSelectArgs {
    fn select(&self) -> Result<DeadSelect> {
        if self.queue.is_none() && self.ids.is_empty() && !self.all {
            return Err(Error::invalid(
                "selection",
                "name --queue, --id, or pass --all",
            ));
        }
        let mut select = DeadSelect::all();
        select.queue = self.queue.clone();
        select.ids = (!self.ids.is_empty()).then(|| self.ids.clone());
        Ok(select)
    }
}

/// Which bulk operation.
#[derive(Debug, Clone, Copy)]
enum Bulk {
    Requeue,
    Purge,
}

impl Bulk {
    fn past(self) -> &'static str {
        match self {
            Bulk::Requeue => "requeued",
            Bulk::Purge => "purged",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Bulk::Requeue => "requeue",
            Bulk::Purge => "purge",
        }
    }

    async fn call(self, jobs: &Jobs, select: DeadSelect) -> Result<u64> {
        match self {
            Bulk::Requeue => jobs.requeue_dead(select).await,
            Bulk::Purge => jobs.purge_dead(select).await,
        }
    }
}

/// Run an `alk dead` command; returns what to print on stdout.
pub(super) async fn run(jobs: &Jobs, cmd: DeadCommand, as_json: bool) -> Result<String> {
    match cmd {
        DeadCommand::List {
            queue,
            tag,
            after,
            limit,
        } => {
            let mut params = DeadListParams::new(limit);
            params.queue = queue;
            params.tag = tag;
            params.after_id = after;
            let jobs = jobs.dead(params).await?;
            Ok(if as_json {
                json_text(&jobs_json(&jobs))
            } else {
                dead_table(&jobs)
            })
        }
        DeadCommand::Requeue(a) => bulk(jobs, Bulk::Requeue, &a, as_json).await,
        DeadCommand::Purge(a) => bulk(jobs, Bulk::Purge, &a, as_json).await,
    }
}

/// Requeue or purge in batches of `--batch`, each its own transaction, with
/// progress on stderr. Stops when a batch acts on nothing, or once as many
/// as matched at the start are done (so dead letters that keep arriving, or
/// requeued jobs that die again, cannot keep it going forever).
async fn bulk(jobs: &Jobs, op: Bulk, a: &DeadSelectArgs, as_json: bool) -> Result<String> {
    let select = a.select()?;
    let total = jobs.dead_count(select.clone()).await?;
    let report = |done: u64, left: Option<u64>| {
        let mut v = json!({ "matched": total, "dry_run": a.dry_run });
        v[op.past()] = json!(done);
        if let Some(left) = left {
            v["left"] = json!(left);
        }
        v
    };
    if a.dry_run {
        return Ok(if as_json {
            json_text(&report(0, None))
        } else {
            format!("would {} {total} dead letters (dry run)\n", op.verb())
        });
    }
    let mut done = 0u64;
    while done < total {
        let started = std::time::Instant::now();
        let n = op.call(jobs, select.clone().limit(a.batch)).await?;
        if n == 0 {
            break;
        }
        done += n;
        progress(&format!("{} {done}/{total}", op.past()));
        // Leave the write lock free for as long as the batch held it (at
        // least 10 ms): SQLite's busy handler is not fair, and an
        // application's writes waiting on it would otherwise time out
        // behind back-to-back batches.
        if done < total {
            tokio::time::sleep(started.elapsed().max(std::time::Duration::from_millis(10))).await;
        }
    }
    // Requeue leaves a dead letter whose unique key a live job holds; say
    // so rather than let the operator believe all went.
    let left = match op {
        Bulk::Requeue if done < total => Some(jobs.dead_count(select).await?),
        _ => None,
    };
    if as_json {
        return Ok(json_text(&report(done, left)));
    }
    let mut out = format!("{} {done}\n", op.past());
    if let Some(left) = left.filter(|n| *n > 0) {
        out.push_str(&format!(
            "{left} matching dead letters stay dead (a live job holds their unique key)\n"
        ));
    }
    Ok(out)
}
