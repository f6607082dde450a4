//! `alk queues …`: pause and resume claims from a queue.

use alkstore::{QueueAdmin, Result, Store};
use clap::Subcommand;
use serde_json::json;

use super::output::json_text;

/// `alk queues …`.
#[derive(Debug, Subcommand)]
pub(super) enum QueuesCommand {
    /// Stop every worker of the store from claiming from a queue (within
    /// one poll); enqueues still go in, running jobs finish.
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
    let e = store.engine();
    Ok(match cmd {
        QueuesCommand::Pause { queue } => {
            let changed = e.queue_pause(queue.as_str()).await?;
            report(&queue, "paused", changed, as_json)
        }
        QueuesCommand::Resume { queue } => {
            let changed = e.queue_resume(queue.as_str()).await?;
            report(&queue, "resumed", changed, as_json)
        }
        QueuesCommand::Paused => {
            let paused = e.queue_paused().await?;
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
