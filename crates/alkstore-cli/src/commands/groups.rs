//! `alk groups`: consumer groups.

use alkstore::group::{bucket_of, hashtextextended, MAX_BUCKETS};
use clap::Subcommand;
use serde_json::json;

use super::output::json_text;

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
        /// Event keys.
        #[arg(required = true)]
        keys: Vec<String>,
    },
}

/// `alk groups bucket`: one line (or JSON object) per key.
pub(super) fn bucket(buckets: u32, keys: &[String], as_json: bool) -> String {
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
