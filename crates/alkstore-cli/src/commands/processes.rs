//! `alk processes …`: who is running against the store, and an operator's
//! quiet and stop orders.

use alkstore::process::ProcessInfo;
use alkstore::{Error, Result, Store};
use clap::Subcommand;
use serde_json::{json, Value};

use super::output::json_text;
use super::text::{now, relative, shorten, unix_seconds_from_ms};

/// `alk processes` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ProcessesCommand {
    /// Every registered worker, group member, subscriber and scheduler:
    /// host, pid, what it works, what it runs now, its last heartbeat
    /// (dead ones are listed for an hour).
    List,
    /// Ask a process to claim nothing new (a worker finishes its jobs and
    /// idles; other kinds stop), at its next heartbeat.
    Quiet {
        /// The process id (first column of the list).
        id: String,
    },
    /// Ask a process to shut down gracefully, at its next heartbeat.
    Stop {
        /// The process id.
        id: String,
    },
}

/// Run an `alk processes` subcommand; the text to print.
pub(crate) async fn run(store: &Store, cmd: ProcessesCommand, as_json: bool) -> Result<String> {
    let (id, ordered) = match cmd {
        ProcessesCommand::List => {
            let list = store.processes().await?;
            return Ok(if as_json {
                json_text(&Value::Array(list.iter().map(as_value).collect()))
            } else {
                table(&list)
            });
        }
        ProcessesCommand::Quiet { id } => {
            let found = store.process(id.clone()).quiet().await?;
            (id, found.then_some("quiet"))
        }
        ProcessesCommand::Stop { id } => {
            let found = store.process(id.clone()).stop().await?;
            (id, found.then_some("stop"))
        }
    };
    match ordered {
        Some(order) => Ok(format!(
            "process {id} told to {order}; it acts on it at its next heartbeat\n"
        )),
        None => Err(Error::NotFound {
            what: format!("process {id:?}"),
            detail: "no such process is registered (see `alk processes list`)".into(),
        }),
    }
}

fn as_value(p: &ProcessInfo) -> Value {
    json!({
        "id": p.id,
        "kind": p.kind,
        "host": p.host,
        "pid": p.pid,
        "version": p.version,
        "roles": p.roles,
        "concurrency": p.concurrency,
        "running": p.running,
        "started_at": unix_seconds_from_ms(p.started_at_ms),
        "heartbeat_at": unix_seconds_from_ms(p.heartbeat_at_ms),
        "expires_at": unix_seconds_from_ms(p.expires_at_ms),
        "alive": p.alive,
        "order": p.order.as_str(),
    })
}

fn table(list: &[ProcessInfo]) -> String {
    let now = now();
    let mut out = format!(
        "{:<36} {:<10} {:<16} {:>7} {:>9} {:<8} {:<10} {}\n",
        "PROCESS", "KIND", "HOST", "PID", "RUNNING", "STATE", "BEAT", "WORKS"
    );
    for p in list {
        let state = match (p.alive, p.order.as_str()) {
            (false, _) => "dead",
            (true, "run") => "alive",
            (true, order) => order,
        };
        out.push_str(&format!(
            "{:<36} {:<10} {:<16} {:>7} {:>9} {:<8} {:<10} {}\n",
            shorten(&p.id, 36),
            shorten(&p.kind, 10),
            shorten(&p.host, 16),
            p.pid,
            format!("{}/{}", p.running, p.concurrency),
            state,
            relative(p.heartbeat_at_ms / 1000, now),
            shorten(&p.roles.join(", "), 60),
        ));
    }
    if list.is_empty() {
        out.push_str("(no process is registered: workers, group members, subscribers and schedulers register while they run)\n");
    }
    out
}
