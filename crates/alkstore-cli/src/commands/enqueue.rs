//! `alk enqueue`: one job, its payload from the command line, a file or
//! stdin.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use alkstore::{
    queue::{EnqueueOpts, Enqueued},
    Error, Result, Store,
};
use clap::Args;
use serde_json::json;

use super::output::json_text;

/// Arguments of `alk enqueue`.
#[derive(Debug, Args)]
pub(super) struct EnqueueArgs {
    /// Queue name.
    queue: String,
    #[command(flatten)]
    payload: PayloadArgs,
    /// Higher runs first (negative runs later).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// How long to wait before the job is due: `90`, `90s`, `5m`, `1h 30m`,
    /// `7d` (a plain number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = super::text::parse_duration)]
    delay: Option<Duration>,
    /// Deduplicate on this key among live jobs of the queue.
    #[arg(long)]
    unique_key: Option<String>,
    /// Attempts before the job is dead-lettered.
    #[arg(long)]
    max_attempts: Option<u32>,
    /// A tag to find the job by (`alk jobs --tag`); repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// A metadata entry, `KEY=VALUE`; the value is JSON when it parses as
    /// JSON (`attempt=3`, `vip=true`), else text. Repeatable.
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta_entry)]
    meta: Vec<(String, serde_json::Value)>,
}

/// `KEY=VALUE` for `--meta`: the value as JSON when it is JSON, else text.
fn parse_meta_entry(text: &str) -> std::result::Result<(String, serde_json::Value), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or("write it as KEY=VALUE, as in --meta requested_by=ops")?;
    if key.is_empty() {
        return Err("the key before `=` is empty".into());
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| value.into());
    Ok((key.to_string(), value))
}

/// Where a payload comes from (shared by `enqueue` and `streams publish`).
#[derive(Debug, Args)]
pub(super) struct PayloadArgs {
    /// Payload: JSON text (checked), or any text with --raw. Give this or
    /// --payload-file, not both.
    payload: Option<String>,
    /// Read the payload from this file (`-` reads stdin): large or binary
    /// payloads (binary needs --raw).
    #[arg(long, value_name = "PATH")]
    payload_file: Option<PathBuf>,
    /// Store the payload bytes as given, without checking it is JSON.
    #[arg(long)]
    raw: bool,
}

/// The payload bytes from exactly one source, checked as JSON unless `raw`.
pub(super) fn payload(a: &PayloadArgs) -> Result<Vec<u8>> {
    let bytes = match (&a.payload, &a.payload_file) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(
                "payload",
                "give it as an argument or with --payload-file, not both",
            ))
        }
        (None, None) => {
            return Err(Error::invalid(
                "payload",
                "missing: pass JSON as an argument, or --payload-file PATH (- reads stdin)",
            ))
        }
        (Some(text), None) => text.clone().into_bytes(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut buf)
                .map_err(|e| Error::invalid("payload", format!("cannot read stdin: {e}")))?;
            buf
        }
        (None, Some(path)) => std::fs::read(path).map_err(|e| {
            Error::invalid("payload", format!("cannot read {}: {e}", path.display()))
        })?,
    };
    if a.raw {
        return Ok(bytes);
    }
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|err| {
        Error::invalid(
            "payload",
            format!("not JSON ({err}); pass --raw to store the bytes as they are"),
        )
    })?;
    serde_json::to_vec(&value).map_err(|err| Error::invalid("payload", err))
}

/// A job ready to enqueue: arguments checked and payload read, before the
/// store is opened (bad input creates no store).
#[derive(Debug)]
pub(super) struct Prepared {
    queue: String,
    payload: Vec<u8>,
    opts: EnqueueOpts,
}

/// Check the arguments and read the payload.
pub(super) fn prepare(a: EnqueueArgs) -> Result<Prepared> {
    let payload = payload(&a.payload)?;
    let mut opts = EnqueueOpts::default().priority(a.priority);
    if let Some(d) = a.delay {
        opts = opts.delay(d);
    }
    if let Some(k) = a.unique_key {
        opts = opts.unique_key(k);
    }
    if let Some(m) = a.max_attempts {
        opts = opts.max_attempts(m);
    }
    opts.tags = a.tags;
    for (key, value) in a.meta {
        opts = opts.meta(key, value);
    }
    Ok(Prepared {
        queue: a.queue,
        payload,
        opts,
    })
}

/// Enqueue the job; returns its id (or the live duplicate's) to print.
pub(super) async fn run(store: &Store, p: Prepared, as_json: bool) -> Result<String> {
    let out = store
        .queue(p.queue)
        .enqueue_bytes(p.payload, p.opts)
        .await?;
    Ok(match (out, as_json) {
        (Enqueued::Inserted(id), true) => json_text(&json!({ "id": id, "duplicate": false })),
        (Enqueued::Duplicate(id), true) => json_text(&json!({ "id": id, "duplicate": true })),
        (Enqueued::Inserted(id), false) => format!("enqueued {id}\n"),
        (Enqueued::Duplicate(id), false) => format!("duplicate of live job {id}\n"),
    })
}
