//! `alk queues …`: pause and resume claims from a queue; and whether a
//! queue named on the command line exists yet.

use alkstore::{Result, Store};
use clap::Subcommand;
use serde_json::json;

use super::output::{json_text, progress};

/// `alk queues …`.
#[derive(Debug, Subcommand)]
pub(super) enum QueuesCommand {
    /// Stop every worker of the store from claiming from a queue (within
    /// one poll); enqueues still go in, running jobs finish. A queue that
    /// does not exist yet may be paused (a note says so): its jobs wait
    /// once enqueued.
    Pause {
        /// Queue name.
        queue: String,
    },
    /// Let workers claim from a paused queue again.
    Resume {
        /// Queue name.
        queue: String,
    },
    /// The paused queues.
    Paused,
}

/// Run an `alk queues` subcommand; the text to print.
pub(super) async fn run(store: &Store, cmd: QueuesCommand, as_json: bool) -> Result<String> {
    Ok(match cmd {
        QueuesCommand::Pause { queue } => {
            if !store.queue(queue.as_str()).exists().await? {
                progress(&format!(
                    "alk: no such queue yet: {queue:?}; paused anyway, so its jobs wait once enqueued"
                ));
            }
            let changed = store.queue(queue.as_str()).pause().await?;
            report(&queue, "paused", changed, as_json)
        }
        QueuesCommand::Resume { queue } => {
            let changed = store.queue(queue.as_str()).resume().await?;
            report(&queue, "resumed", changed, as_json)
        }
        QueuesCommand::Paused => {
            let paused = store.paused_queues().await?;
            if as_json {
                json_text(&json!(paused))
            } else {
                paused.iter().map(|q| format!("{q}\n")).collect()
            }
        }
    })
}

fn report(queue: &str, what: &str, changed: bool, as_json: bool) -> String {
    if as_json {
        json_text(&json!({ "queue": queue, what: true, "changed": changed }))
    } else if changed {
        format!("{what} {queue}\n")
    } else {
        format!("{queue} was already {what}\n")
    }
}

/// Say on stderr (stdout stays the result) that `queue` does not exist
/// yet ([`Queue::exists`](alkstore::queue::Queue::exists)), when it does not: a
/// mistyped name would otherwise show an empty result without a word.
pub(super) async fn note_if_unknown(store: &Store, queue: &str) -> Result<()> {
    if !store.queue(queue).exists().await? {
        progress(&format!(
            "alk: no such queue yet: {queue:?} (no jobs, dead letters or kept completed jobs, none finished, not paused)"
        ));
    }
    Ok(())
}
