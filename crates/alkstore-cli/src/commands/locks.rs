//! `alk locks …`: the store's named locks.

use alkstore::{Result, Store};
use clap::Subcommand;
use serde_json::{json, Value};

use super::output::json_text;
use super::text::{now, relative, shorten, unix_seconds_from_ms};

/// `alk locks` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum LocksCommand {
    /// Every lock ever taken: holder (while held), last fencing token,
    /// expiry.
    List,
}

/// Run an `alk locks` subcommand; the text to print.
pub(crate) async fn run(store: &Store, cmd: LocksCommand, as_json: bool) -> Result<String> {
    match cmd {
        LocksCommand::List => {
            let locks = store.locks().await?;
            if as_json {
                return Ok(json_text(&Value::Array(
                    locks
                        .iter()
                        .map(|l| {
                            json!({
                                "name": l.name,
                                "owner": l.owner,
                                "held": l.owner.is_some(),
                                "token": l.token,
                                "acquired_at": unix_seconds_from_ms(l.acquired_at_ms),
                                "expires_at": unix_seconds_from_ms(l.expires_at_ms),
                            })
                        })
                        .collect(),
                )));
            }
            let now = now();
            let mut out = format!(
                "{:<32} {:<32} {:>8} {}\n",
                "LOCK", "HOLDER", "TOKEN", "EXPIRES"
            );
            for l in &locks {
                let (holder, expires) = match &l.owner {
                    Some(owner) => (shorten(owner, 32), relative(l.expires_at_ms / 1000, now)),
                    None => ("(free)".to_string(), "-".to_string()),
                };
                out.push_str(&format!(
                    "{:<32} {:<32} {:>8} {}\n",
                    shorten(&l.name, 32),
                    holder,
                    l.token,
                    expires
                ));
            }
            Ok(out)
        }
    }
}
