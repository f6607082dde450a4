//! `alk groups`: consumer groups — where a key goes, list, status, dead
//! letters, resize.

use alkstore::group::{bucket_of, hashtextextended, GroupStatus, MAX_BUCKETS};
use alkstore::stream::validate_key;
use alkstore::{Result, Store};
use clap::Subcommand;
use serde_json::{json, Value};

use super::output::json_text;
use super::text::{now, payload_preview, payload_text, relative, shorten, unix_seconds_from_ms};

/// `alk groups …`.
#[derive(Debug, Subcommand)]
pub(super) enum GroupsCommand {
    /// Which bucket each key goes to in a group of N buckets: PostgreSQL's
    /// `(((hashtextextended(key, 0) % N) + N) % N)`, the same on both
    /// engines. Needs no store.
    Bucket {
        /// The group's bucket count N.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_BUCKETS)))]
        buckets: u32,
        /// Event keys (each one a key `streams publish --key` accepts).
        #[arg(required = true)]
        keys: Vec<String>,
    },
    /// Every group: stream, bucket count, live workers and owners.
    List,
    /// One group's buckets: owner, epoch, lease expiry, checkpoint, lag.
    Status {
        /// Group name.
        group: String,
    },
    /// Events a group's handler gave up on, with their errors.
    Dead {
        /// Group name.
        group: String,
        /// Only dead letters after this offset.
        #[arg(long, default_value_t = 0)]
        after: i64,
        /// At most this many.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
    },
    /// Run dead letters again (the given offsets, or all of the group's):
    /// the worker holding each one's bucket takes it within a poll interval,
    /// and deletes it when it succeeds.
    Requeue {
        /// Group name.
        group: String,
        /// Only these offsets (repeatable); default: every dead letter.
        #[arg(long = "offset")]
        offsets: Vec<i64>,
    },
    /// Delete a group's dead letters for good (their events stay in the
    /// stream; checkpoints do not move). Needs `--offset` or `--all`.
    Purge {
        /// Group name.
        group: String,
        /// Only these offsets (repeatable).
        #[arg(long = "offset", conflicts_with = "all")]
        offsets: Vec<i64>,
        /// Every dead letter of the group.
        #[arg(long)]
        all: bool,
    },
    /// Change a group's bucket count. Refused while any lease is live (stop
    /// the group's workers first); every bucket restarts from the lowest
    /// checkpoint, so events between that and a bucket's own checkpoint are
    /// delivered again.
    Resize {
        /// Group name.
        group: String,
        /// The new bucket count.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_BUCKETS)))]
        buckets: u32,
    },
}

/// `alk groups bucket`: one line (or JSON object) per key; a key that
/// cannot be published is refused, as `streams publish` refuses it.
pub(super) fn bucket(buckets: u32, keys: &[String], as_json: bool) -> Result<String> {
    keys.iter().try_for_each(|k| validate_key(k))?;
    Ok(bucket_text(buckets, keys, as_json))
}

fn bucket_text(buckets: u32, keys: &[String], as_json: bool) -> String {
    if as_json {
        let rows: Vec<_> = keys
            .iter()
            .map(|k| {
                json!({
                    "key": k,
                    "bucket": bucket_of(k.as_bytes(), buckets),
                    "hash": hashtextextended(k.as_bytes(), 0),
                })
            })
            .collect();
        return json_text(&json!(rows));
    }
    let width = keys
        .iter()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(3);
    let mut out = format!("{:<width$}  BUCKET (of {buckets})\n", "KEY");
    for k in keys {
        out.push_str(&format!(
            "{k:<width$}  {}\n",
            bucket_of(k.as_bytes(), buckets)
        ));
    }
    out
}

fn status_json(s: &GroupStatus) -> Value {
    json!({
        "group": s.group,
        "stream": s.stream,
        "buckets": s.buckets.iter().map(|b| json!({
            "bucket": b.bucket,
            "owner": b.owner,
            "epoch": b.epoch,
            "lease_expires_at": b.expires_at_ms.map(unix_seconds_from_ms),
            "expired": b.expired,
            "checkpoint": b.checkpoint,
            "lag": b.lag,
        })).collect::<Vec<_>>(),
    })
}

fn status_table(s: &GroupStatus) -> String {
    let now_ms = now().saturating_mul(1000);
    let mut out = format!(
        "group {} on stream {} ({} buckets)\n{:>6}  {:<28} {:>6}  {:<14} {:>14} {:>10}\n",
        s.group,
        s.stream,
        s.buckets.len(),
        "BUCKET",
        "OWNER",
        "EPOCH",
        "LEASE",
        "CHECKPOINT",
        "LAG"
    );
    for b in &s.buckets {
        let lease = match (b.expires_at_ms, b.expired) {
            (None, _) => "-".to_string(),
            (Some(_), true) => "expired".to_string(),
            (Some(t), false) => format!("{:.1}s left", (t - now_ms) as f64 / 1000.0),
        };
        out.push_str(&format!(
            "{:>6}  {:<28} {:>6}  {:<14} {:>14} {:>10}\n",
            b.bucket,
            shorten(b.owner.as_deref().unwrap_or("-"), 28),
            b.epoch,
            lease,
            b.checkpoint,
            b.lag
        ));
    }
    out
}

/// Run a groups command that needs a store (everything but `bucket`).
pub(super) async fn run(store: &Store, cmd: GroupsCommand, as_json: bool) -> Result<String> {
    Ok(match cmd {
        GroupsCommand::Bucket { buckets, keys } => bucket(buckets, &keys, as_json)?,
        GroupsCommand::List => {
            let groups = store.groups().await?;
            if as_json {
                json_text(&Value::Array(
                    groups
                        .iter()
                        .map(|g| {
                            json!({
                                "group": g.group,
                                "stream": g.stream,
                                "buckets": g.buckets,
                                "live_workers": g.live_workers,
                                "live_owners": g.live_owners,
                                "dead": g.dead,
                            })
                        })
                        .collect(),
                ))
            } else {
                let mut out = format!(
                    "{:<28} {:<28} {:>8} {:>8} {:>8} {:>8}\n",
                    "GROUP", "STREAM", "BUCKETS", "WORKERS", "OWNERS", "DEAD"
                );
                for g in &groups {
                    out.push_str(&format!(
                        "{:<28} {:<28} {:>8} {:>8} {:>8} {:>8}\n",
                        shorten(&g.group, 28),
                        shorten(&g.stream, 28),
                        g.buckets,
                        g.live_workers,
                        g.live_owners,
                        g.dead
                    ));
                }
                out
            }
        }
        GroupsCommand::Status { group } => {
            let s = store.group(group.as_str()).status().await?;
            if as_json {
                json_text(&status_json(&s))
            } else {
                status_table(&s)
            }
        }
        GroupsCommand::Dead {
            group,
            after,
            limit,
        } => {
            let dead = store.group(group).dead_letters(after, limit).await?;
            if as_json {
                json_text(&Value::Array(
                    dead.iter()
                        .map(|d| {
                            let (payload, encoding) = payload_text(&d.payload);
                            json!({
                                "offset": d.offset,
                                "bucket": d.bucket,
                                "stream": d.stream,
                                "key": d.key,
                                "payload": payload,
                                "payload_encoding": encoding,
                                "error": d.error,
                                "attempts": d.attempts,
                                "failed_at": d.failed_at,
                                "requeued": d.requeued,
                            })
                        })
                        .collect(),
                ))
            } else {
                let mut out = format!(
                    "{:>14} {:>6} {:<16} {:>8}  {:<10}  {:<40}  PAYLOAD\n",
                    "OFFSET", "BUCKET", "KEY", "ATTEMPTS", "FAILED", "ERROR"
                );
                for d in &dead {
                    out.push_str(&format!(
                        "{:>14} {:>6} {:<16} {:>8}  {:<10}  {:<40}  {}\n",
                        d.offset,
                        d.bucket,
                        shorten(d.key.as_deref().unwrap_or("-"), 16),
                        d.attempts,
                        relative(d.failed_at, now()),
                        shorten(&d.error, 40),
                        payload_preview(&d.payload, 40)
                    ));
                }
                out
            }
        }
        GroupsCommand::Requeue { group, offsets } => {
            let n = store.group(group.as_str()).requeue_dead(offsets).await?;
            if as_json {
                json_text(&json!({ "group": group, "requeued": n }))
            } else {
                format!("requeued {n} dead letter(s) of group {group}\n")
            }
        }
        GroupsCommand::Purge {
            group,
            offsets,
            all,
        } => {
            if offsets.is_empty() && !all {
                return Err(alkstore::Error::invalid(
                    "groups purge",
                    "give --offset OFFSET (repeatable) or --all",
                ));
            }
            let n = store.group(group.as_str()).purge_dead(offsets).await?;
            if as_json {
                json_text(&json!({ "group": group, "purged": n }))
            } else {
                format!("purged {n} dead letter(s) of group {group}\n")
            }
        }
        GroupsCommand::Resize { group, buckets } => {
            let r = store.group(group.as_str()).resize(buckets).await?;
            if as_json {
                json_text(&json!({
                    "group": group,
                    "from": r.from,
                    "to": r.to,
                    "rewound_to": r.rewound_to,
                }))
            } else {
                format!(
                    "group {group}: {} -> {} buckets; every bucket restarts after offset {} (events past a bucket's old checkpoint are delivered again)\n",
                    r.from, r.to, r.rewound_to
                )
            }
        }
    })
}
