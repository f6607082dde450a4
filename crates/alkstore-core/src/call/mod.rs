//! The one wrapper around every engine call.
//!
//! Engines implement one driver trait per primitive
//! ([`QueueDriver`](crate::queue::QueueDriver),
//! [`StreamDriver`](crate::stream::StreamDriver),
//! [`GroupDriver`](crate::group::GroupDriver),
//! [`LockDriver`](crate::lock::LockDriver),
//! [`RateDriver`](crate::rate::RateDriver),
//! [`ResultDriver`](crate::results::ResultDriver),
//! [`ScheduleDriver`](crate::schedule::ScheduleDriver),
//! [`NotifyDriver`](crate::notify::NotifyDriver), the transaction's
//! [`TxDriver`](crate::TxDriver)) and the base [`Engine`](crate::Engine):
//! they hold SQL and nothing else, and take [`Checked`] parameters, so
//! they cannot be reached with input that was not validated. The public
//! traits callers use ([`QueueEngine`](crate::QueueEngine),
//! [`QueueAdmin`](crate::QueueAdmin), [`StreamEngine`](crate::StreamEngine),
//! [`GroupEngine`](crate::GroupEngine), …) are implemented once, in core,
//! for every driver. Each of their methods goes through one macro
//! (`engine_call!`): validate once against the store's [`Limits`] (or
//! refuse it with `Error::Closed` once the engine was closed), run the
//! driver inside an `alkstore.<method>` span, record the call's metrics,
//! and (in the method) send this process's wake hints. Writes are
//! operations instead ([`crate::op`]): the same validation, metrics and
//! hints, in [`Place::run`](crate::Place::run), wherever they run (an
//! `alkstore.op` span whose `op` field names them; metrics named `tx_…`
//! inside a transaction).
//!
//! Metrics, through the `metrics` facade (free while no recorder is
//! installed):
//!
//! | name | kind | labels |
//! |------|------|--------|
//! | `alkstore_engine_calls_total` | counter | `engine`, `method`, `outcome` (`ok` or the error kind, e.g. `invalid_input`) |
//! | `alkstore_engine_call_seconds` | histogram | `engine`, `method` |

use std::ops::Deref;
use std::time::Instant;

use crate::{Limits, Result};

/// Every engine call's parameters validate themselves against the store's
/// [`Limits`] before anything is written.
pub trait Validate {
    /// Reject input the contract does not allow.
    fn validate_params(&self, limits: &Limits) -> Result<()>;
}

/// A call without parameters (`queue_list`) has nothing to check.
impl Validate for () {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        Ok(())
    }
}

/// Parameters that passed validation against a store's [`Limits`]: the only
/// way into an engine's driver methods.
///
/// ```
/// use alkstore_core::{Checked, JobClaimParams, Limits};
///
/// let limits = Limits::default();
/// assert!(Checked::<JobClaimParams>::new(JobClaimParams::new("mail", "w1", 10), &limits).is_ok());
/// assert!(Checked::<JobClaimParams>::new(JobClaimParams::new("mail", "w1", 0), &limits).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked<P>(P);

impl<P: Validate> Checked<P> {
    /// Convert and validate; nothing else constructs a `Checked`.
    pub fn new(params: impl Into<P>, limits: &Limits) -> Result<Self> {
        let params = params.into();
        params.validate_params(limits)?;
        Ok(Checked(params))
    }
}

impl<P> Checked<P> {
    /// The validated parameters.
    pub fn into_inner(self) -> P {
        self.0
    }
}

impl<P> Deref for Checked<P> {
    type Target = P;

    fn deref(&self) -> &P {
        &self.0
    }
}

/// Record one finished engine call.
pub(crate) fn record<T>(
    engine: &'static str,
    method: impl Into<metrics::SharedString>,
    started: Instant,
    out: &Result<T>,
) {
    let method: metrics::SharedString = method.into();
    let outcome = match out {
        Ok(_) => "ok",
        Err(e) => e.kind().as_str(),
    };
    metrics::counter!(
        "alkstore_engine_calls_total",
        "engine" => engine,
        "method" => method.clone(),
        "outcome" => outcome
    )
    .increment(1);
    metrics::histogram!(
        "alkstore_engine_call_seconds",
        "engine" => engine,
        "method" => method
    )
    .record(started.elapsed().as_secs_f64());
}

/// Run one engine call: validate `$params` (as a `$ty`) against the engine's limits into
/// a [`Checked`] bound to `$p`, run `$run` in an `alkstore.<method>` span,
/// and record the call's metrics. Hints are the caller's: it sees the result.
macro_rules! engine_call {
    ($engine:expr, $method:ident, $params:expr => $ty:ty, |$p:ident| $run:expr) => {{
        use tracing::Instrument as _;
        let engine = $engine;
        let started = std::time::Instant::now();
        let span = tracing::debug_span!(concat!("alkstore.", stringify!($method)));
        let out = async {
            if $crate::Engine::is_closed(engine) {
                return Err($crate::Error::Closed);
            }
            let $p = $crate::call::Checked::<$ty>::new($params, $crate::Engine::limits(engine))?;
            $run.await
        }
        .instrument(span)
        .await;
        $crate::call::record(
            $crate::Engine::capabilities(engine).name,
            stringify!($method),
            started,
            &out,
        );
        out
    }};
}
pub(crate) use engine_call;

#[cfg(test)]
mod tests;
