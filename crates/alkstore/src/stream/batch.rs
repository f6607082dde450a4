//! Transactional event handlers in batches, for the stream [`Subscriber`]
//! and the consumer-group runner: events run in transactions of up to N
//! events each, and every transaction commits the reader's position (a
//! consumer offset, a fenced bucket checkpoint) with the handler's writes.
//!
//! The batch is per-event calls inside one transaction, not one call with
//! a slice: a failing event is known by its offset, so it is retried (and,
//! in a group, dead-lettered) alone. When a call fails, the whole
//! transaction rolls back; the events before the failing one then run
//! again in a transaction of their own (they commit), and the failing one
//! runs alone, per the error policy ([`Retries`]).
//!
//! [`Subscriber`]: super::Subscriber

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use alkstore_core::stream::Event;
use alkstore_core::{BoxError, Error};

use super::OnError;
use crate::{AnyEngine, Tx, TxFuture};

/// What a transactional reader does in each transaction besides calling
/// its handler.
pub(crate) trait TxReader {
    /// Run the handler on `event` inside `tx`.
    fn call<'t>(&'t self, tx: &'t mut Tx, event: &Event) -> TxFuture<'t, (), BoxError>;

    /// Record the reader's position, `offset`, inside `tx` before it
    /// commits (and check what must hold for it to commit); an error
    /// rolls the transaction back.
    fn position<'t>(
        &'t self,
        tx: &'t mut Tx,
        offset: i64,
    ) -> Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 't>>;

    /// Whether another handler call may start in the open transaction (a
    /// group: its lease is still surely valid).
    fn may_start(&self) -> bool {
        true
    }
}

/// How one transaction over the head of a reader's events ended.
#[derive(Debug)]
pub(crate) enum Step {
    /// The first `n` events ran, and committed with the position at the
    /// last of them.
    Committed(usize),
    /// The handler failed on the event at `index`: everything was rolled
    /// back.
    Failed {
        /// Where in the events given.
        index: usize,
        /// The handler's error.
        error: BoxError,
    },
    /// [`TxReader::may_start`] said no: everything was rolled back.
    Stopped,
    /// The transaction could not begin, the position was refused (a lost
    /// lease), or the commit failed: nothing committed.
    Refused(Error),
}

/// Run one transaction over the head of `events`: at most `events.len()`
/// of them, and no more once `interval` has passed since it began (at
/// least one always runs). See [`Step`].
pub(crate) async fn one_tx<R: TxReader + ?Sized>(
    reader: &R,
    engine: &AnyEngine,
    events: &[Event],
    interval: Duration,
) -> Step {
    let mut tx = match Tx::begin(engine).await {
        Ok(tx) => tx,
        Err(e) => return Step::Refused(e),
    };
    let began = Instant::now();
    let mut ran = 0;
    for (index, event) in events.iter().enumerate() {
        if index > 0 && began.elapsed() >= interval {
            break;
        }
        if !reader.may_start() {
            return abandon(tx, Step::Stopped).await;
        }
        if let Err(error) = reader.call(&mut tx, event).await {
            return abandon(tx, Step::Failed { index, error }).await;
        }
        // A call of the handler's own failed and it returned `Ok` anyway:
        // the transaction cannot commit, a failure of this event.
        if let Some(reason) = tx.poisoned() {
            let error = format!("the transaction cannot commit: {reason}").into();
            return abandon(tx, Step::Failed { index, error }).await;
        }
        ran = index + 1;
    }
    let Some(last) = events[..ran].last() else {
        return abandon(tx, Step::Committed(0)).await;
    };
    if let Err(e) = reader.position(&mut tx, last.offset).await {
        return abandon(tx, Step::Refused(e)).await;
    }
    match tx.commit().await {
        Ok(()) => Step::Committed(ran),
        Err(e) => Step::Refused(e),
    }
}

/// Roll `tx` back (a failure is only logged: the transaction ends either
/// way) and return `step`.
async fn abandon(tx: Tx, step: Step) -> Step {
    if let Err(e) = tx.rollback().await {
        tracing::warn!(error = %e, "rolling back a handler's transaction failed");
    }
    step
}

/// A reader's progress through a failing event: which event, how often it
/// ran, the wait before its next run and its last error.
#[derive(Debug)]
struct Failing {
    offset: i64,
    runs: u32,
    backoff: Duration,
    error: Option<BoxError>,
}

/// The error policy of a transactional reader ([`OnError`]) over batches:
/// after a failure, the events before the failing one run in one
/// transaction, then the failing one alone, up to its runs.
#[derive(Debug)]
pub(crate) struct Retries {
    attempts: u32,
    first_backoff: Duration,
    failing: Option<Failing>,
}

/// What to do with the event at the head of a reader's events.
#[derive(Debug)]
pub(crate) enum Next {
    /// Run a transaction over at most this many events, after waiting
    /// this long (the failing event's backoff; zero otherwise).
    Run(usize, Duration),
    /// The failing event at the head used up its runs: give up on it
    /// (stop, or dead-letter it) with its last error and how many runs.
    GiveUp(BoxError, u32),
}

impl Retries {
    pub(crate) fn new(on_error: OnError) -> Self {
        let (attempts, first_backoff) = match on_error {
            OnError::Stop => (1, Duration::ZERO),
            OnError::Retry { attempts, backoff } => (attempts.max(1), backoff),
        };
        Retries {
            attempts,
            first_backoff,
            failing: None,
        }
    }

    /// What to do next with `events` (not empty), transactions taking at
    /// most `max`.
    pub(crate) fn next(&mut self, events: &[Event], max: usize) -> Next {
        let max = max.clamp(1, events.len().max(1));
        let Some(f) = &mut self.failing else {
            return Next::Run(max, Duration::ZERO);
        };
        match events.iter().position(|e| e.offset == f.offset) {
            // The failing event heads them: alone, after its backoff, or
            // given up.
            Some(0) if f.runs >= self.attempts => {
                let error = f.error.take().unwrap_or_else(|| "failed".into());
                let runs = f.runs;
                self.failing = None;
                Next::GiveUp(error, runs)
            }
            Some(0) => Next::Run(1, f.backoff),
            // The events before it, together.
            Some(before) => Next::Run(before.min(max), Duration::ZERO),
            // Not among them (handled elsewhere meanwhile).
            None => {
                self.failing = None;
                Next::Run(max, Duration::ZERO)
            }
        }
    }

    /// The handler failed on the event at `offset` with `error`.
    pub(crate) fn failed(&mut self, offset: i64, error: BoxError) {
        match &mut self.failing {
            Some(f) if f.offset == offset => {
                f.runs += 1;
                if f.runs > 1 {
                    f.backoff = f.backoff.saturating_mul(2).min(Duration::from_secs(60));
                }
                f.error = Some(error);
            }
            _ => {
                self.failing = Some(Failing {
                    offset,
                    runs: 1,
                    backoff: self.first_backoff,
                    error: Some(error),
                });
            }
        }
    }

    /// Events up to `offset` committed: a failing event among them
    /// succeeded at last.
    pub(crate) fn committed(&mut self, offset: i64) {
        if self.failing.as_ref().is_some_and(|f| f.offset <= offset) {
            self.failing = None;
        }
    }

    /// How many runs the failing event at `offset` has had (0 if none).
    pub(crate) fn runs(&self, offset: i64) -> u32 {
        self.failing
            .as_ref()
            .filter(|f| f.offset == offset)
            .map_or(0, |f| f.runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(offsets: &[i64]) -> Vec<Event> {
        offsets
            .iter()
            .map(|o| Event {
                offset: *o,
                stream: "s".into(),
                key: None,
                payload: Vec::new(),
                created_at: 0,
            })
            .collect()
    }

    fn run(next: Next) -> (usize, Duration) {
        match next {
            Next::Run(n, wait) => (n, wait),
            Next::GiveUp(e, runs) => panic!("gave up after {runs}: {e}"),
        }
    }

    /// A failure inside a batch: the events before it together, then it
    /// alone with its backoff doubling, then given up after its runs.
    #[test]
    fn a_failing_event_runs_alone_after_the_ones_before_it() {
        let mut r = Retries::new(OnError::Retry {
            attempts: 3,
            backoff: Duration::from_millis(10),
        });
        let all = events(&[1, 2, 3, 4, 5]);
        assert_eq!(run(r.next(&all, 100)), (5, Duration::ZERO));
        r.failed(4, "boom".into());
        assert_eq!(run(r.next(&all, 100)), (3, Duration::ZERO));
        r.committed(3);
        let rest = &all[3..];
        assert_eq!(run(r.next(rest, 100)), (1, Duration::from_millis(10)));
        r.failed(4, "boom".into());
        assert_eq!(r.runs(4), 2);
        assert_eq!(run(r.next(rest, 100)), (1, Duration::from_millis(20)));
        r.failed(4, "last".into());
        match r.next(rest, 100) {
            Next::GiveUp(e, runs) => assert_eq!((e.to_string(), runs), ("last".into(), 3)),
            other => panic!("{other:?}"),
        }
        // Given up: the events after it run together again.
        assert_eq!(run(r.next(&rest[1..], 100)), (1, Duration::ZERO));
    }

    /// With `OnError::Stop`, a failure at the head gives up at once; one
    /// that succeeds on a later run clears the failure.
    #[test]
    fn stop_gives_up_at_once_and_a_success_clears_a_failure() {
        let mut r = Retries::new(OnError::Stop);
        let all = events(&[7, 8]);
        r.failed(7, "no".into());
        assert!(matches!(r.next(&all, 10), Next::GiveUp(_, 1)));
        let mut r = Retries::new(OnError::default());
        r.failed(8, "flaky".into());
        assert_eq!(run(r.next(&all, 10)), (1, Duration::ZERO));
        r.committed(7);
        assert_eq!(run(r.next(&all[1..], 10)).0, 1);
        r.committed(8);
        assert_eq!(run(r.next(&all[1..], 10)), (1, Duration::ZERO));
        assert_eq!(r.runs(8), 0);
    }
}
