//! The driver the model rows share (`queues::model`, `streams::model`,
//! `locks::model`): random operation sequences from a proptest strategy,
//! each run on the engine and on the row's model by `run`, the first
//! failing one shrunk to a minimal sequence and printed.

use std::fmt::Debug;
use std::future::Future;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// How many sequences a model row tries: `ALKSTORE_MODEL_CASES`, default 48
/// (CI-sized; a long run: thousands).
pub(crate) fn cases() -> u32 {
    std::env::var("ALKSTORE_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// Run the `regressions`, then [`cases`] sequences drawn from `strategy`
/// (the same ones every run: a fixed seed), through `run(name, ops)`,
/// which returns the first difference between engine and model. `name`
/// is fresh for every run, for the run's own queue, stream or lock names.
/// Panics with the smallest failing sequence found.
pub(crate) async fn check<T, S, F, Fut>(strategy: S, regressions: Vec<T>, run: F)
where
    T: Debug + Clone,
    S: Strategy<Value = T>,
    F: Fn(String, T) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut n = 0usize;
    let mut name = || {
        n += 1;
        format!("m{n}")
    };
    for (i, ops) in regressions.into_iter().enumerate() {
        if let Err(why) = run(name(), ops.clone()).await {
            panic!("regression case {i} fails again: {why}\n{ops:#?}");
        }
    }
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    for case in 0..cases() {
        let mut tree = strategy.new_tree(&mut runner).expect("a sequence");
        let Err(first) = run(name(), tree.current()).await else {
            continue;
        };
        // Shrink: simplify while it still fails, complicate back when a
        // simplification passes, for at most 400 runs.
        let (mut smallest, mut why) = (tree.current(), first);
        let mut runs = 0;
        while runs < 400 && tree.simplify() {
            loop {
                runs += 1;
                match run(name(), tree.current()).await {
                    Err(e) => {
                        (smallest, why) = (tree.current(), e);
                        break;
                    }
                    Ok(()) if runs < 400 && tree.complicate() => continue,
                    Ok(()) => break,
                }
            }
        }
        panic!(
            "case {case}: the engine and the model disagree: {why}\n\
             smallest sequence, to keep in the row's `regressions()`:\n{smallest:#?}"
        );
    }
}
