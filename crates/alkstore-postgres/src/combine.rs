//! Group commit for the engine's autocommit enqueue and publish calls:
//! calls that arrive while earlier ones are being written go out together,
//! in one statement and one transaction, so many callers share one commit
//! and its WAL flush instead of queueing for one flush each.
//!
//! A call that finds a free runner slot sends at once, with no added hop;
//! it waits only when every slot is busy, and then rides with the next
//! statement. Each caller still returns only after the commit that holds
//! its rows, with its own ids (durability is unchanged). A statement that
//! fails fails every call in it: an error after the commit was sent is
//! ambiguous, and running each call again alone could write it twice.

use std::sync::{Arc, Mutex};

/// Most jobs or events of a call that joins a group; larger calls go alone.
pub(crate) const GROUP_CALL_ROWS: usize = 100;
/// Most payload bytes of a call that joins a group.
pub(crate) const GROUP_CALL_BYTES: usize = 64 * 1024;
/// Most rows in one group's statement.
pub(crate) const GROUP_ROWS: usize = 1000;
/// How many group statements one engine may have out at once. More calls
/// than this at a time wait, and then go together.
pub(crate) const GROUP_RUNNERS: usize = 1;
/// How often a runner that finds nobody waiting yields before it stops.
const IDLE_YIELDS: usize = 8;

use alkstore_core::{Error, Result};
use tokio::sync::oneshot;

/// One call waiting to be written: its input, its size (rows), and where
/// its answer goes.
pub(crate) struct Waiter<T, R> {
    pub(crate) input: T,
    pub(crate) size: usize,
    pub(crate) reply: oneshot::Sender<Result<R>>,
}

/// A batch of calls a runner writes together.
pub(crate) type Batch<T, R> = Vec<Waiter<T, R>>;

struct State<T, R> {
    waiting: Batch<T, R>,
    /// Runners writing a batch now.
    running: usize,
}

/// Calls waiting for a runner, and how many runners may write at once.
pub(crate) struct Combiner<T, R> {
    state: Mutex<State<T, R>>,
    runners: usize,
    /// Most rows in one batch (a single larger call goes alone).
    max_rows: usize,
}

impl<T, R> Combiner<T, R> {
    pub(crate) fn new(runners: usize, max_rows: usize) -> Self {
        Combiner {
            state: Mutex::new(State {
                waiting: Vec::new(),
                running: 0,
            }),
            runners: runners.max(1),
            max_rows: max_rows.max(1),
        }
    }

    /// Queue a call. Returns where its answer will come, and, when a runner
    /// slot was free, the batch the caller must now start a runner with
    /// (see [`Runner`]).
    pub(crate) fn join(
        &self,
        input: T,
        size: usize,
    ) -> (oneshot::Receiver<Result<R>>, Option<Batch<T, R>>) {
        let (reply, rx) = oneshot::channel();
        let Ok(mut state) = self.state.lock() else {
            // Poisoned by a panic elsewhere: write this call alone.
            return (rx, Some(vec![Waiter { input, size, reply }]));
        };
        state.waiting.push(Waiter { input, size, reply });
        if state.running < self.runners {
            state.running += 1;
            let batch = self.take(&mut state);
            (rx, Some(batch))
        } else {
            (rx, None)
        }
    }

    /// How many calls wait.
    fn waiting(&self) -> usize {
        self.state.lock().map(|s| s.waiting.len()).unwrap_or(0)
    }

    /// The next batch for a runner that finished one, or `None` (and the
    /// runner's slot is freed) when nobody waits.
    pub(crate) fn next(&self) -> Option<Batch<T, R>> {
        let Ok(mut state) = self.state.lock() else {
            return None;
        };
        if state.waiting.is_empty() {
            state.running = state.running.saturating_sub(1);
            None
        } else {
            Some(self.take(&mut state))
        }
    }

    /// The oldest waiting calls, up to `max_rows` rows (at least one call).
    fn take(&self, state: &mut State<T, R>) -> Batch<T, R> {
        let mut rows = 0;
        let mut n = 0;
        for w in &state.waiting {
            if n > 0 && rows + w.size > self.max_rows {
                break;
            }
            rows += w.size;
            n += 1;
        }
        let rest = state.waiting.split_off(n);
        std::mem::replace(&mut state.waiting, rest)
    }

    /// A runner that stops without `next` (it panicked): free its slot and
    /// fail whoever waits, rather than leave them waiting for nobody.
    fn abandon(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.running = state.running.saturating_sub(1);
            for w in state.waiting.drain(..) {
                let _ = w.reply.send(Err(Error::database(
                    "group commit",
                    "the statement writing this call's group stopped",
                )));
            }
        }
    }
}

/// Holds a runner slot; gives it back if the runner ends without
/// [`Runner::finish`] (a panic while writing).
pub(crate) struct Runner<T, R> {
    combiner: Option<Arc<Combiner<T, R>>>,
}

impl<T, R> Runner<T, R> {
    pub(crate) fn new(combiner: Arc<Combiner<T, R>>) -> Self {
        Runner {
            combiner: Some(combiner),
        }
    }

    /// The next batch, or `None` once the slot is given back. It first
    /// lets the `answered` callers of the batch just written run (a few
    /// yields at most): a caller that calls again at once (a loop of
    /// enqueues) then joins the next batch rather than the one after it.
    pub(crate) async fn next(&mut self, answered: usize) -> Option<Batch<T, R>> {
        for _ in 0..IDLE_YIELDS {
            if self.combiner.as_ref()?.waiting() >= answered {
                break;
            }
            tokio::task::yield_now().await;
        }
        let combiner = self.combiner.as_ref()?;
        let next = combiner.next();
        if next.is_none() {
            self.combiner = None;
        }
        next
    }
}

impl<T, R> Drop for Runner<T, R> {
    fn drop(&mut self) {
        if let Some(c) = self.combiner.take() {
            c.abandon();
        }
    }
}

/// Whether a call of `rows` rows and `bytes` payload bytes joins a group
/// (larger calls are batches already, and go alone).
pub(crate) fn groupable(rows: usize, bytes: usize) -> bool {
    rows <= GROUP_CALL_ROWS && bytes <= GROUP_CALL_BYTES
}

/// Queue a call of `rows` rows in `combiner` and wait for its answer;
/// `start` spawns a runner when the call found a free slot.
pub(crate) async fn submit<T, R>(
    combiner: &Combiner<T, R>,
    input: T,
    rows: usize,
    op: &'static str,
    start: impl FnOnce(Batch<T, R>),
) -> Result<R> {
    let (answer, batch) = combiner.join(input, rows);
    if let Some(batch) = batch {
        start(batch);
    }
    answer
        .await
        .map_err(|_| Error::database(op, "the statement writing this call's group stopped"))?
}

/// A runner's loop: write `batch` with `write` (the rows of all its calls,
/// in call order; it returns one answer per row, in the same order), then
/// whatever gathered meanwhile, until nobody waits.
pub(crate) async fn run<T, R, F, Fut>(
    combiner: Arc<Combiner<Vec<T>, Vec<R>>>,
    batch: Batch<Vec<T>, Vec<R>>,
    op: &'static str,
    write: F,
) where
    F: Fn(Vec<T>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<R>>>,
{
    let mut runner = Runner::new(combiner);
    let mut next = Some(batch);
    while let Some(mut batch) = next {
        let rows: Vec<T> = if batch.len() == 1 {
            std::mem::take(&mut batch[0].input)
        } else {
            batch
                .iter_mut()
                .flat_map(|w| std::mem::take(&mut w.input))
                .collect()
        };
        let outcome = write(rows).await;
        let answered = batch.len();
        reply(batch, outcome.map(Vec::into_iter), op, |all, n| {
            all.by_ref().take(n).collect()
        });
        next = runner.next(answered).await;
    }
}

/// An error for each caller of a failed batch: the same kind and message
/// (the driver's source error itself cannot be shared).
pub(crate) fn each_error(e: &Error, op: &'static str) -> Error {
    match e {
        Error::Connect { target, cause } => Error::Connect {
            target: target.clone(),
            cause: cause.clone(),
        },
        Error::Closed => Error::Closed,
        Error::Conflict { op, reason } => Error::Conflict {
            op,
            reason: reason.clone(),
        },
        other => Error::database(op, other.to_string()),
    }
}

/// Deliver a batch's answers: `split` gives each caller its part of a
/// successful write; a failure goes to every caller.
pub(crate) fn reply<T, R, A>(
    batch: Batch<T, R>,
    outcome: Result<A>,
    op: &'static str,
    mut split: impl FnMut(&mut A, usize) -> R,
) {
    match outcome {
        Ok(mut all) => {
            for w in batch {
                let part = split(&mut all, w.size);
                let _ = w.reply.send(Ok(part));
            }
        }
        Err(e) => {
            let mut first = Some(e);
            let n = batch.len();
            for (i, w) in batch.into_iter().enumerate() {
                let err = match (i + 1 == n, &first) {
                    (true, _) => first.take().unwrap_or(Error::Closed),
                    (false, Some(e)) => each_error(e, op),
                    (false, None) => Error::Closed,
                };
                let _ = w.reply.send(Err(err));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_slot_sends_at_once_and_a_busy_one_gathers() {
        let c: Combiner<u32, u32> = Combiner::new(1, 10);
        let (_a, first) = c.join(1, 1);
        assert_eq!(
            first.map(|b| b.len()),
            Some(1),
            "the first call runs at once"
        );
        let (_b, none) = c.join(2, 4);
        assert!(none.is_none(), "the only slot is busy");
        let (_c, none) = c.join(3, 4);
        assert!(none.is_none());
        let (_d, none) = c.join(4, 4);
        assert!(none.is_none());
        // At most 10 rows: the calls of 4 and 4 rows go together, the
        // third waits for the round after.
        let next = c.next().expect("a batch");
        assert_eq!(next.iter().map(|w| w.input).collect::<Vec<_>>(), vec![2, 3]);
        let last = c.next().expect("the last batch");
        assert_eq!(last.iter().map(|w| w.input).collect::<Vec<_>>(), vec![4]);
        assert!(c.next().is_none(), "nobody waits: the slot is freed");
        let (_e, again) = c.join(5, 1);
        assert!(again.is_some(), "the freed slot is taken by the next call");
    }

    #[test]
    fn a_call_larger_than_the_limit_goes_alone() {
        let c: Combiner<u32, u32> = Combiner::new(1, 10);
        let (_a, _) = c.join(1, 1);
        let (_b, _) = c.join(2, 50);
        let (_c, _) = c.join(3, 1);
        assert_eq!(c.next().map(|b| b.len()), Some(1));
        assert_eq!(c.next().map(|b| b.len()), Some(1));
    }

    #[tokio::test]
    async fn an_abandoned_runner_frees_its_slot_and_fails_the_waiting() {
        let c = Arc::new(Combiner::<u32, u32>::new(1, 10));
        let (_a, first) = c.join(1, 1);
        let runner = Runner::new(c.clone());
        assert!(first.is_some());
        let (waiting, none) = c.join(2, 1);
        assert!(none.is_none());
        drop(runner);
        assert!(waiting.await.expect("answered").is_err());
        let (_b, again) = c.join(3, 1);
        assert!(again.is_some(), "the slot came back");
    }

    #[tokio::test]
    async fn a_failed_batch_fails_every_call_with_its_kind() {
        let c: Combiner<u32, u32> = Combiner::new(1, 10);
        let (a, batch) = c.join(1, 1);
        let mut batch = batch.expect("runs");
        let (b, _) = c.join(2, 1);
        batch.extend(c.next().expect("the second"));
        reply(
            batch,
            Err::<Vec<u32>, _>(Error::Connect {
                target: "t".into(),
                cause: "down".into(),
            }),
            "job_enqueue",
            |_, _| 0,
        );
        for rx in [a, b] {
            let e = rx.await.expect("answered").expect_err("failed");
            assert_eq!(e.kind(), alkstore_core::ErrorKind::Connect);
        }
    }
}
