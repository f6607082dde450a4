//! Statements for a transaction-mode pooler (PgBouncer's
//! `pool_mode = transaction`): such a pooler hands each transaction, and
//! each statement outside one, whichever server connection is free, so a
//! statement prepared on one server connection is unknown on the next.
//! Every statement then runs unnamed, parsed, bound and executed in one
//! round trip ending in one `Sync` (tokio-postgres's `query_typed`), which
//! no pooler can split.
//!
//! An unnamed statement needs its parameter types up front. The engine
//! learns them once per statement text from the server, and keeps them for
//! the engine's life: one simple-protocol message (which a pooler passes
//! whole to one server connection) prepares the text under a name of the
//! engine's own, reads its parameter types from `pg_prepared_statements`
//! and deallocates it. Never under tokio-postgres's names (`s1`, `s2`, …):
//! another client of the pooler may have left one of those behind on the
//! server connection.
//!
//! A statement prepared by name inside a transaction is safe too, as long
//! as it is closed before the transaction ends: tokio-postgres closes it
//! when the last of it drops, and its rows hold it. Rows of such a
//! statement must not outlive the commit; the engine's own go through
//! [`crate::conn::On`] instead.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use futures_util::TryStreamExt;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Error as PgError, Row, SimpleQueryMessage};

/// The parameter types of every statement text the engine ran unnamed.
#[derive(Debug, Default)]
pub(crate) struct TypeCache {
    types: RwLock<HashMap<String, Arc<[Type]>>>,
    /// Numbers the names statements are learned under.
    learned: AtomicU64,
}

impl TypeCache {
    fn known(&self, text: &str) -> Option<Arc<[Type]>> {
        // A poisoned lock still holds whole entries: each is inserted at once.
        let types = self.types.read().unwrap_or_else(|p| p.into_inner());
        types.get(text).cloned()
    }

    /// The parameter types of `text`, learned on `client` the first time.
    /// A statement the server refuses is its error, and not kept.
    pub(crate) async fn types(&self, client: &Client, text: &str) -> Result<Arc<[Type]>, Typed> {
        if let Some(t) = self.known(text) {
            return Ok(t);
        }
        let name = format!(
            "alkstore_types_{}_{}",
            std::process::id(),
            self.learned.fetch_add(1, Ordering::Relaxed)
        );
        // One message, so one implicit transaction on one server
        // connection. Should the read fail, the statement stays behind
        // under a name nobody else uses.
        let messages = client
            .simple_query(&format!(
                "PREPARE {name} AS {text}; \
                 SELECT parameter_types::oid[]::text FROM pg_prepared_statements \
                 WHERE name = '{name}'; \
                 DEALLOCATE {name}"
            ))
            .await
            .map_err(Typed::Db)?;
        let oids = messages
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0),
                _ => None,
            })
            .ok_or(Typed::Types("no row in pg_prepared_statements".into()))?;
        let learned = parse_oids(oids)?;
        let mut types = self.types.write().unwrap_or_else(|p| p.into_inner());
        types.insert(text.to_string(), learned.clone());
        Ok(learned)
    }
}

/// `{20,25}` as types (only built-in ones: the engine's statements take
/// no others).
fn parse_oids(oids: &str) -> Result<Arc<[Type]>, Typed> {
    let inner = oids.trim_start_matches('{').trim_end_matches('}');
    inner
        .split(',')
        .filter(|o| !o.is_empty())
        .map(|o| {
            let oid: u32 = o
                .parse()
                .map_err(|_| Typed::Types(format!("parameter type {o:?} is not an OID")))?;
            Type::from_oid(oid)
                .ok_or_else(|| Typed::Types(format!("parameter type {oid} is not a built-in type")))
        })
        .collect()
}

/// `params` paired with the types `text` takes.
async fn typed<'p>(
    client: &Client,
    types: &TypeCache,
    text: &str,
    params: &[&'p (dyn ToSql + Sync)],
) -> Result<Vec<(&'p (dyn ToSql + Sync), Type)>, Typed> {
    let t = types.types(client, text).await?;
    if t.len() != params.len() {
        return Err(Typed::Count {
            takes: t.len(),
            given: params.len(),
        });
    }
    Ok(params.iter().copied().zip(t.iter().cloned()).collect())
}

/// Why an unnamed statement did not run.
#[derive(Debug)]
pub(crate) enum Typed {
    /// The server or the connection's error.
    Db(PgError),
    /// A statement of this crate given the wrong number of parameters.
    Count { takes: usize, given: usize },
    /// The server's parameter types could not be read.
    Types(String),
}

/// Run `text` unnamed; its rows.
pub(crate) async fn query(
    client: &Client,
    types: &TypeCache,
    text: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, Typed> {
    let params = typed(client, types, text, params).await?;
    client.query_typed(text, &params).await.map_err(Typed::Db)
}

/// Run `text` unnamed; how many rows it changed.
pub(crate) async fn execute(
    client: &Client,
    types: &TypeCache,
    text: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, Typed> {
    let params = typed(client, types, text, params).await?;
    let mut rows = pin!(client
        .query_typed_raw(text, params)
        .await
        .map_err(Typed::Db)?);
    while rows.try_next().await.map_err(Typed::Db)?.is_some() {}
    Ok(rows.rows_affected().unwrap_or(0))
}
